package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/leasetest"
	"github.com/governor-dev/governor/internal/redistest"
)

// BenchmarkBudgets1000 times 'governor budgets' (the table and --json)
// with 1,000 budgets configured, each with state (one reservation
// settled on it), against 'governor config check' (a process start
// reading the same configuration, no backend), in turns, on the file
// backend and on Redis:
//
//	go test -run '^$' -bench Budgets1000 -benchtime 20x ./cmd/governor/
//
// Target (issue 33): a budget view of 1,000 budgets renders in under 1 s.
func BenchmarkBudgets1000(b *testing.B) {
	var cfg strings.Builder
	cfg.WriteString("providers:\n  p: {max_concurrency: 4}\nbudgets:\n")
	for i := range 1000 {
		fmt.Fprintf(&cfg, "  b%04d: {limit: 40, unit: USD, per: 24h, models: [m%d]}\n", i, i)
	}
	bench := func(b *testing.B, tg *target) {
		g := tg.governor(b)
		ctx := context.Background()
		for i := range 1000 {
			sb := governor.SpendBudget{Name: fmt.Sprintf("b%04d", i), Limit: 40 * governor.MicroUnit, Window: governor.BudgetWindow{Per: 24 * time.Hour}}
			r, err := leasetest.Reserve(ctx, g, []governor.BudgetSpend{{Budget: sb, Amount: governor.MicroUnit}}, governor.BudgetOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.Settle(ctx, governor.MicroUnit/2); err != nil {
				b.Fatal(err)
			}
		}
		commands := [][]string{{"config", "check"}, {"budgets"}, {"--json", "budgets"}}
		times := make([][]float64, len(commands))
		cpu := make([][]float64, len(commands)) // user + system, ms: what the loaded machine does not stretch
		for i := 0; i < b.N; i++ {
			for k := range commands {
				j := (i + k) % len(commands)
				c := exec.Command(tg.bin, append(tg.global(), commands[j]...)...)
				c.Env = cleanEnv()
				start := time.Now()
				out, err := c.Output()
				times[j] = append(times[j], float64(time.Since(start))/float64(time.Millisecond))
				cpu[j] = append(cpu[j], float64(c.ProcessState.UserTime()+c.ProcessState.SystemTime())/float64(time.Millisecond))
				if err != nil || (j > 0 && strings.Count(string(out), "b0") < 1000) {
					b.Fatalf("%s: %v: %d bytes", c, err, len(out))
				}
			}
		}
		b.ReportMetric(0, "ns/op")
		b.ReportMetric(median(times[0]), "config-check-ms")
		b.ReportMetric(median(times[1]), "budgets-ms")
		b.ReportMetric(median(times[2]), "budgets-json-ms")
		b.ReportMetric(median(cpu[1]), "budgets-cpu-ms")
		fmt.Printf("RATIO budgets1000_%s budgets_ms=%.1f json_ms=%.1f config_check_ms=%.1f cpu_ms: budgets=%.1f json=%.1f config_check=%.1f n=%d\n",
			tg.name, median(times[1]), median(times[2]), median(times[0]), median(cpu[1]), median(cpu[2]), median(cpu[0]), b.N)
	}
	b.Run("file", func(b *testing.B) {
		bench(b, &target{bin: governorBin(b), name: "file", dir: b.TempDir() + "/state", config: writeRunConfig(b, cfg.String())})
	})
	b.Run("redis", func(b *testing.B) {
		s := redistest.Start(b)
		bench(b, &target{bin: governorBin(b), name: "redis", redisURL: s.URL(), config: writeRunConfig(b, cfg.String())})
	})
}
