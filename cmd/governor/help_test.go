package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command's --help lists its exit codes, cobra's own help and
// completion commands included: the README promises it.
func TestEveryCommandHelpListsExitCodes(t *testing.T) {
	a := &app{}
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		n++
		path := strings.Fields(c.CommandPath())[1:]
		code, out, errs := cli(t, append(path, "--help")...)
		if code != 0 {
			t.Errorf("%s --help: exit %d %s", c.CommandPath(), code, errs)
		}
		if !regexp.MustCompile(`Exit codes[^:]*:(.|\n)*\b0\b`).MatchString(out) {
			t.Errorf("%s --help lists no exit codes:\n%s", c.CommandPath(), out)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(a.rootCmd())
	if n < 20 {
		t.Errorf("walked %d commands; want every one (at least 20)", n)
	}
}
