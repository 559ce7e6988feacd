package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/governor-dev/governor/internal/nearest"
)

var (
	unknownFlag = regexp.MustCompile(`^unknown flag: --(\S+)$`)
	// pflag's words for a duration without a unit: invalid argument "5"
	// for "--timeout" flag: time: missing unit in duration "5".
	unitlessDuration = regexp.MustCompile(`^invalid argument "([^"]*)" for "(-\S+)" flag: time: missing unit in duration`)
)

// flagError is err, pflag's refusal of c's flags, in a newcomer's words:
// a mistyped flag names the flags it most likely meant, and a duration
// without a unit says how to write one.
func flagError(c *cobra.Command, err error) error {
	msg := err.Error()
	if m := unknownFlag.FindStringSubmatch(msg); m != nil {
		var names []string
		seen := map[string]bool{}
		add := func(f *pflag.Flag) {
			if !seen[f.Name] {
				seen[f.Name] = true
				names = append(names, f.Name)
			}
		}
		c.Flags().VisitAll(add)
		c.InheritedFlags().VisitAll(add)
		if near := nearest.Names(m[1], names); len(near) > 0 {
			return fmt.Errorf("%s; did you mean --%s?", msg, strings.Join(near, " or --"))
		}
		return err
	}
	if m := unitlessDuration.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s %s: a duration needs a unit: write %ss (or %sms, %sm, %sh)", m[2], m[1], m[1], m[1], m[1], m[1])
	}
	return err
}

// conflictingFlags refuses a Redis URL given with --backend file, naming
// both: the file backend would ignore it silently. (--dir with Redis is
// the directory of the machine's witness of the server: docs/redis.md.)
func (a *app) conflictingFlags() error {
	url := ""
	switch {
	case a.redisURL != "":
		url = "--redis-url"
	case a.redisURLFile != "":
		url = "--redis-url-file"
	}
	if url != "" && a.backend == "file" {
		return fmt.Errorf("%s with --backend file: the file backend reads no Redis URL; give one of them", url)
	}
	return nil
}
