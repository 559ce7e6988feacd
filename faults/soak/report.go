//go:build linux

package main

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"
)

// reportText is the run's report in Markdown: what ran, the faults
// injected with their counts, the invariants checked, the worst figures
// and every violation with its evidence.
func (s *soak) reportText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	host, _ := os.Hostname()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(&b, "## soak: backend %s, %v, seed %d\n\n", s.o.backend, s.o.duration, s.o.seed)
	fmt.Fprintf(&b, "Command: `go run ./faults/soak -duration %v -backend %s -seed %d` (%d run loops, %d shell loops). Host %s, %d CPUs, load at the end %s. Ran %s to %s (UTC).\n\n",
		s.o.duration, s.o.backend, s.o.seed, s.o.runs, s.o.shells, host, runtime.NumCPU(), strings.Join(strings.Fields(string(load))[:3], " "),
		s.start.UTC().Format("2006-01-02 15:04:05"), time.Now().UTC().Format("15:04:05"))
	b.WriteString(capacityText())
	if len(s.violations) == 0 {
		b.WriteString("**Result: pass**: no invariant violated.\n\n")
	} else {
		fmt.Fprintf(&b, "**Result: FAIL**: %d violations.\n\n", len(s.violations))
		for _, v := range s.violations {
			fmt.Fprintf(&b, "- %s\n", v)
		}
		b.WriteString("\n")
	}
	table := func(title, col string, m map[string]int) {
		fmt.Fprintf(&b, "| %s | %s |\n| --- | ---: |\n", title, col)
		keys := make([]string, 0, len(m))
		total := 0
		for k, v := range m {
			keys = append(keys, k)
			total += v
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "| %s | %d |\n", k, m[k])
		}
		fmt.Fprintf(&b, "| **total** | **%d** |\n\n", total)
	}
	table("fault injected", "count", s.faults)
	table("invariant checked", "checks", s.checked)
	table("operation", "count", s.ops)
	if len(s.worst) > 0 {
		b.WriteString("| worst figure | value |\n| --- | ---: |\n")
		keys := make([]string, 0, len(s.worst))
		for k := range s.worst {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "| %s | %.2f |\n", k, s.worst[k])
		}
		b.WriteString("\n")
	}
	if len(s.samples) > 0 {
		b.WriteString("A sample of each kind of failed exit (their stderr):\n\n")
		keys := make([]string, 0, len(s.samples))
		for k := range s.samples {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "- %s: `%s`\n", k, strings.ReplaceAll(s.samples[k], "`", "'"))
		}
		b.WriteString("\n")
	}
	if len(s.skipped) > 0 {
		b.WriteString("Not run here:\n\n")
		keys := make([]string, 0, len(s.skipped))
		for k := range s.skipped {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "- %s: %s\n", k, s.skipped[k])
		}
		b.WriteString("\n")
	}
	return b.String()
}
