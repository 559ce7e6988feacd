package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// walkCommands calls f on every command of the tree that --help shows.
func walkCommands(t *testing.T, f func(c *cobra.Command)) {
	t.Helper()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		f(c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk((&app{}).rootCmd(""))
}

// Every command's --help opens with one line, then Usage and two or
// three examples, all on the first screen; the flags and the long
// explanation follow.
func TestHelpFirstScreen(t *testing.T) {
	n := 0
	walkCommands(t, func(c *cobra.Command) {
		n++
		path := strings.Fields(c.CommandPath())[1:]
		code, out, errs := cli(t, append(path, "--help")...)
		if code != 0 {
			t.Errorf("%s --help: exit %d %s", c.CommandPath(), code, errs)
			return
		}
		lines := strings.Split(out, "\n")
		if lines[0] != c.Short || len(lines[0]) > 90 || lines[1] != "" {
			t.Errorf("%s --help opens with %q; want its one line (at most 90 characters) then a blank line", c.CommandPath(), lines[0])
		}
		usage, examples, end := index(lines, "Usage:"), index(lines, "Examples:"), -1
		for i := examples + 1; examples > 0 && i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) == "" {
				end = i
				break
			}
		}
		flags := index(lines, "Flags:")
		switch {
		case usage != 2:
			t.Errorf("%s --help: Usage at line %d; want line 3", c.CommandPath(), usage+1)
		case examples < 0 || end < 0 || end > helpScreen:
			t.Errorf("%s --help: Examples end at line %d; want them within the first %d lines:\n%s", c.CommandPath(), end+1, helpScreen, out)
		case end-examples-1 < 1 || end-examples-1 > 3:
			t.Errorf("%s --help: %d example lines; want 1 to 3", c.CommandPath(), end-examples-1)
		case flags >= 0 && flags < end:
			t.Errorf("%s --help: flags before the examples", c.CommandPath())
		}
		if c.Long != "" && flags >= 0 && strings.Index(out, strings.SplitN(c.Long, "\n", 2)[0]) < strings.Index(out, "\nFlags:") {
			t.Errorf("%s --help: the long explanation comes before the flags", c.CommandPath())
		}
	})
	if n < 30 {
		t.Errorf("walked %d commands; want every one", n)
	}
}

func index(lines []string, s string) int {
	for i, l := range lines {
		if l == s {
			return i
		}
	}
	return -1
}

// Every example of every --help parses: its command exists and its flags
// are the command's.
func TestHelpExamplesParse(t *testing.T) {
	walkCommands(t, func(c *cobra.Command) {
		for _, line := range strings.Split(c.Example, "\n") {
			words := exampleWords(line)
			if words == nil {
				continue
			}
			root := (&app{}).rootCmd("")
			root.InitDefaultVersionFlag()
			cmd, rest, err := root.Find(words)
			if err != nil || cmd == root && len(words) > 0 && !strings.HasPrefix(words[0], "-") {
				t.Errorf("%s: example %q names no command: %v", c.CommandPath(), line, err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
			}
		}
	})
}

// exampleWords are the arguments of the governor command an example line
// runs, nil when it runs none: quotes dropped, cut at a pipe, a
// redirection, a comment or the end of a command substitution.
func exampleWords(line string) []string {
	_, after, ok := strings.Cut(" "+line, " governor ")
	if !ok {
		return nil
	}
	var words []string
	for _, w := range strings.Fields(after) {
		if strings.ContainsAny(w[:1], "|>#;&)") || w == "--" {
			break
		}
		words = append(words, strings.Trim(w, `"'`))
	}
	return words
}

// cliSummary is README's CLI list, made from the help: each command
// that runs, with its usage line and its one line.
func cliSummary(t *testing.T) string {
	var b strings.Builder
	walkCommands(t, func(c *cobra.Command) {
		if !c.Runnable() || c.Name() == "help" || c.HasParent() && c.Parent().Name() == "completion" {
			return
		}
		use := c.CommandPath()
		if _, args, ok := strings.Cut(c.Use, " "); ok {
			use += " " + args
		}
		if len(use) > 40 {
			use += "\n"
		}
		fmt.Fprintf(&b, "%-40s  %s\n", use, c.Short)
	})
	return b.String()
}

// README's CLI list is the help's: every command, its usage and its one
// line, the line under the usage when it is long (run with GOVERNOR_UPDATE_README=1 to write it).
func TestREADMECLIIsTheHelp(t *testing.T) {
	want := cliSummary(t)
	got := readmeBlock(t, "## CLI")
	if got == want {
		return
	}
	if os.Getenv("GOVERNOR_UPDATE_README") == "1" {
		p := filepath.Join("..", "..", "README.md")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), got, want, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README's CLI list differs from the help (GOVERNOR_UPDATE_README=1 writes it); want:\n%s", want)
}
