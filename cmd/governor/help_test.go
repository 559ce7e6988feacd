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
	walk(a.rootCmd(""))
	if n < 20 {
		t.Errorf("walked %d commands; want every one (at least 20)", n)
	}
}

// TestOneCommandTree: a root made for one command (its name first among
// the arguments) has that command alone, as the whole tree has it: the
// same name, help, flags and subcommands, recursively. So `governor
// bridge`, `governor run` and the rest start without making the others,
// and nothing they show or accept changes.
func TestOneCommandTree(t *testing.T) {
	a := &app{}
	names := map[string]bool{}
	for _, nc := range a.commands() {
		names[nc.name] = true
		full, one := (&app{}).rootCmd(""), (&app{}).rootCmd(nc.name)
		if len(one.Commands()) != 1 || one.Commands()[0].Name() != nc.name {
			t.Fatalf("the root made for %q has %d commands, the first %q; want that one alone", nc.name, len(one.Commands()), one.Commands()[0].Name())
		}
		var want *cobra.Command
		for _, c := range full.Commands() {
			if c.Name() == nc.name {
				want = c
			}
		}
		if want == nil {
			t.Fatalf("the whole tree has no command %q (its table's name does not match its Use)", nc.name)
		}
		var same func(w, g *cobra.Command)
		same = func(w, g *cobra.Command) {
			if w.CommandPath() != g.CommandPath() || w.UsageString() != g.UsageString() || w.Long != g.Long || w.Short != g.Short {
				t.Errorf("%s: made alone, its help differs from the whole tree's:\n%s\n%s\nwant\n%s\n%s",
					w.CommandPath(), g.Long, g.UsageString(), w.Long, w.UsageString())
			}
			wc, gc := w.Commands(), g.Commands()
			if len(wc) != len(gc) {
				t.Fatalf("%s: %d subcommands made alone, %d in the whole tree", w.CommandPath(), len(gc), len(wc))
			}
			for i := range wc {
				same(wc[i], gc[i])
			}
		}
		same(want, one.Commands()[0])
	}
	for _, c := range (&app{}).rootCmd("").Commands() {
		if !names[c.Name()] && c.Name() != "help" && c.Name() != "completion" {
			t.Errorf("command %q is not in app.commands: it cannot be made alone", c.Name())
		}
	}
}
