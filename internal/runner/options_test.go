package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/internal/acquire"
)

// What only a run checks (a command, --timeout, --kill-grace); the rest
// is the pipeline's (internal/acquire).
func TestPlanErrorsNameTheValueAndWhatIsAllowed(t *testing.T) {
	base := func() Options {
		return Options{Args: []string{"true"}, Config: &config.Loaded{}, Request: acquire.Request{Resources: []string{"heavy"}, Limit: 1}}
	}
	for _, tc := range []struct {
		name string
		mod  func(*Options)
		has  []string
	}{
		{"no command", func(o *Options) { o.Args = nil }, []string{"no command", "--"}},
		{"negative timeout", func(o *Options) { o.Timeout = -time.Second }, []string{"--timeout -1s", "positive"}},
		{"negative grace", func(o *Options) { o.KillGrace = -time.Second }, []string{"--kill-grace -1s", "positive"}},
		{"backoff without provider", func(o *Options) { o.BackoffExitCode = 3 }, []string{"--backoff-exit-code 3", "--provider"}},
		{"pipeline", func(o *Options) { o.IfBusy = "later" }, []string{`"later"`, "fail, wait or skip"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base()
			tc.mod(&o)
			_, err := plan(&o)
			if err == nil {
				t.Fatal("plan accepted it")
			}
			for _, h := range tc.has {
				if !strings.Contains(err.Error(), h) {
					t.Errorf("error %q does not contain %q", err, h)
				}
			}
		})
	}
}

func TestChildEnv(t *testing.T) {
	env := []string{"PATH=/bin", EnvHeld + "=old", "X=1", EnvSession + "=old", EnvToken + "=old", EnvRunIDs + "=old"}
	got := childEnv(env, []string{EnvHeld + "=p/r=id", EnvToken + "=p/r=3"}, "sess", "a b")
	want := []string{"PATH=/bin", "X=1", EnvHeld + "=p/r=id", EnvToken + "=p/r=3", EnvSession + "=sess", EnvRunIDs + "=a b"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("childEnv = %q, want %q", got, want)
	}
}

func TestCommandMissing(t *testing.T) {
	env := []string{"PATH=/nonexistent:" + t.TempDir()}
	if !commandMissing("sh", env) {
		t.Error("sh found in a PATH without it")
	}
	if commandMissing("sh", []string{"PATH=/usr/bin:/bin"}) {
		t.Error("sh not found in /usr/bin:/bin")
	}
	if !commandMissing("./no-such-file", nil) || commandMissing("/bin/sh", nil) || !commandMissing("", nil) {
		t.Error("paths with a slash are checked as they are")
	}
}
