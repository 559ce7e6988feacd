package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/view"
)

// A named resource that is neither configured nor has state is an error
// naming the closest known names, not "limit 0 ... free 0".
func TestSlotsUnknownResource(t *testing.T) {
	tg := fileTarget(t, "  provider:anthropic: {limit: 2}\n")
	if code, _, errs := cli(t, append(tg.global(), "acquire", "gpu", "--limit", "1")...); code != 0 {
		t.Fatalf("acquire: exit %d %s", code, errs)
	}
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"nosuch"}, `resource "nosuch" is unknown in project runtest: it is not configured and has no state; known: gpu, heavy, provider:anthropic`},
		{[]string{"haevy"}, `resource "haevy" is unknown in project runtest: it is not configured and has no state; did you mean heavy?`},
		{[]string{"heavy", "gpv"}, `"gpv" is unknown`},
	} {
		code, out, errs := cli(t, append(append(tg.global(), "slots"), tc.names...)...)
		if code != exitcode.Failure || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("slots %q: exit %d, stdout %q, stderr %q; want 125 and %q", tc.names, code, out, errs, tc.want)
		}
	}
	// Known resources, configured (heavy, never used) or with state (gpu).
	for _, name := range []string{"heavy", "gpu", "provider:anthropic"} {
		if code, _, errs := cli(t, append(tg.global(), "slots", name)...); code != 0 {
			t.Errorf("slots %s: exit %d %s", name, code, errs)
		}
	}
}

// slots --watch into a pipe writes no escapes: with --json one object per
// line per reading, else text blocks each opened by a "-- TIME" line.
func TestSlotsWatchIntoAPipe(t *testing.T) {
	t.Parallel()
	tg := fileTarget(t, "")
	for _, asJSON := range []bool{true, false} {
		args := []string{"slots", "heavy", "--watch"}
		if asJSON {
			args = append(args, "--json")
		}
		c := tg.command(args...)
		stdout, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var errb bytes.Buffer
		c.Stderr = &errb
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(stdout)
		var got []string // three readings
		for len(got) < 3 {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("--json=%v: reading: %v (stderr %s)", asJSON, err, &errb)
			}
			if strings.ContainsRune(line, '\033') {
				t.Fatalf("--json=%v: an escape written into a pipe: %q", asJSON, line)
			}
			switch {
			case asJSON:
				var sj view.Slots
				if err := json.Unmarshal([]byte(line), &sj); err != nil || len(sj.Resources) != 1 || sj.Resources[0].Resource != "heavy" {
					t.Fatalf("--json line %q: %v; want one slots object per line", line, err)
				}
				got = append(got, line)
			case strings.HasPrefix(line, "-- "):
				if _, err := time.Parse(time.RFC3339, strings.TrimSpace(line[3:])); err != nil {
					t.Fatalf("block header %q: %v", line, err)
				}
				got = append(got, line)
			case !strings.HasPrefix(line, "heavy  limit 1"):
				t.Fatalf("text line %q: want a block header or heavy's line", line)
			}
		}
		_ = c.Process.Signal(os.Interrupt)
		if err := c.Wait(); err != nil {
			t.Errorf("--json=%v: after INT: %v, stderr %s; want exit 0", asJSON, err, &errb)
		}
	}
}

// On a terminal, slots --watch still redraws the screen.
func TestSlotsWatchOnATerminal(t *testing.T) {
	tg := fileTarget(t, "")
	master, slave := openPTY(t)
	seen := readTerminal(master)
	c := tg.command("slots", "heavy", "--watch")
	c.Stdout = slave
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "two redraws on the terminal", func() bool {
		return strings.Count(seen(), "\033[H\033[2J") >= 2 && strings.Contains(seen(), "heavy  limit 1")
	})
	_ = c.Process.Signal(os.Interrupt)
	if err := c.Wait(); err != nil {
		t.Errorf("after INT: %v; want exit 0", err)
	}
	if strings.Contains(seen(), "-- ") {
		t.Errorf("a terminal got the pipe's block headers:\n%q", seen())
	}
}
