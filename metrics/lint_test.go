package metrics_test

import (
	"bytes"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/governor-dev/governor/internal/proctest"
	"github.com/governor-dev/governor/metrics"
)

// TestMetricsExpositionLint checks the page serve exposes with
// client_golang's linter and, where it is installed (Debian package
// prometheus; .ci/run installs it), with `promtool check metrics`. The
// state has every kind of series: gauges, counters, a histogram, rate
// keys.
func TestMetricsExpositionLint(t *testing.T) {
	c := newCollector(t, fixedState(), metrics.CollectorOptions{Limits: map[string]int{"run": 3}})
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	in, err := metrics.NewInstruments(reg)
	if err != nil {
		t.Fatal(err)
	}
	in.ObserveWait("gpu", 0)
	srv := httptest.NewServer(metrics.Handler(reg, c))
	defer srv.Close()
	code, page := proctest.Get(t, srv.URL+"/metrics")
	if code != 200 || !strings.Contains(page, "governor_acquire_wait_seconds_bucket") {
		t.Fatalf("/metrics: %d\n%s", code, page)
	}

	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("GOVERNOR_REQUIRE_REDIS") == "1" {
			t.Fatal("promtool not found, and GOVERNOR_REQUIRE_REDIS=1 (CI) wants every check: apt-get install prometheus")
		}
		t.Log("promtool not found (Debian package prometheus): the exposition was checked by client_golang's linter only")
		return
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(page)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || strings.TrimSpace(out.String()) != "" {
		t.Fatalf("promtool check metrics: %v\n%s", err, out.String())
	}
}
