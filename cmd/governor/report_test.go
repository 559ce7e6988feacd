package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --if-busy skip is the expected outcome of a cron job: one short line on
// stderr, and nothing at all with --quiet.
func TestAcquireSkipIsOneLineAndQuietIsSilent(t *testing.T) {
	g := []string{"--backend", "file", "--dir", filepath.Join(t.TempDir(), "s"), "--config", emptyConfig(t)}
	if code, _, errs := cli(t, append(g, "acquire", "heavy", "--limit", "1", "--session", "nightly")...); code != 0 {
		t.Fatalf("acquire: exit %d %s", code, errs)
	}
	code, out, errs := cli(t, append(g, "acquire", "heavy", "--limit", "1", "--if-busy", "skip")...)
	if want := "governor: heavy is busy: 1 of 1 in use, held by session nightly; skipped (--if-busy skip)\n"; code != 75 || out != "" || errs != want {
		t.Errorf("--if-busy skip: exit %d, stdout %q, stderr %q; want 75 and %q", code, out, errs, want)
	}
	for _, flags := range [][]string{{"--if-busy", "skip"}, {"--if-busy", "fail"}, {"--if-busy", "wait", "--wait-timeout", "100ms"}} {
		code, out, errs := cli(t, append(append(g, "acquire", "heavy", "--limit", "1", "--quiet"), flags...)...)
		if (code != 73 && code != 75) || out != "" || errs != "" {
			t.Errorf("acquire --quiet %q: exit %d, stdout %q, stderr %q; want 73 or 75 and nothing", flags, code, out, errs)
		}
	}
	// --quiet hides only the expected outcome, never governor's own failure.
	if code, _, errs := cli(t, append(g, "acquire", "heavy", "--limit", "-1", "--quiet")...); code != 125 || !strings.Contains(errs, "--limit -1") {
		t.Errorf("acquire --quiet --limit -1: exit %d, stderr %q; want 125 naming the value", code, errs)
	}
}

// errorObject parses stderr as exactly one JSON object on one line.
func errorObject(t *testing.T, what, stderr string) errorJSON {
	t.Helper()
	var e errorJSON
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &e) != nil {
		t.Fatalf("%s: stderr is not one JSON object on one line:\n%s", what, stderr)
	}
	return e
}

// With --json every failure is one JSON object on stderr with the exit
// code and the message: bad flags, unknown commands, bad config, busy
// refusals (with the holders), skips, wait timeouts and run's own.
func TestJSONErrors(t *testing.T) {
	tg := fileTarget(t, "")
	g := append(tg.global(), "--json")
	if code, _, errs := cli(t, append(g, "acquire", "heavy", "--session", "holder-1")...); code != 0 {
		t.Fatalf("acquire: exit %d %s", code, errs)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		want    string
		holders bool
	}{
		{"bad flag", []string{"acquire", "heavy", "--limit", "x"}, 125, `"x"`, false},
		{"unknown flag", []string{"slots", "--nosuch"}, 125, "--nosuch", false},
		{"unknown command", []string{"nosuch"}, 125, `"nosuch"`, false},
		{"bad value", []string{"acquire", "heavy", "--limit", "-3"}, 125, "--limit -3", false},
		{"bad handle", []string{"release", "nolease"}, 125, "RESOURCE@LEASE_ID", false},
		{"busy", []string{"acquire", "heavy"}, 73, "heavy is busy: 1 of 1 in use", true},
		{"skip", []string{"acquire", "heavy", "--if-busy", "skip"}, 75, "skipped", true},
		{"wait timeout", []string{"acquire", "heavy", "--if-busy", "wait", "--wait-timeout", "100ms"}, 73, "--wait-timeout 100ms", false},
		{"run busy", []string{"run", "--resource", "heavy", "--", "true"}, 73, "heavy is busy", true},
		{"run bad flag", []string{"run", "--resource", "heavy", "--if-busy", "maybe", "--", "true"}, 125, `"maybe"`, false},
		{"run not found", []string{"run", "--resource", "other", "--limit", "1", "--", "no-such-command-for-governor"}, 127, "not found", false},
		{"released twice", []string{"release", "heavy@0123"}, 122, "not held", false},
	} {
		code, _, errs := cli(t, append(append([]string{}, g...), tc.args...)...)
		e := errorObject(t, tc.name, errs)
		if code != tc.code || e.ExitCode != tc.code || !strings.Contains(e.Error, tc.want) || strings.HasPrefix(e.Error, "governor:") {
			t.Errorf("%s: exit %d, %+v; want exit_code %d and an error containing %q", tc.name, code, e, tc.code, tc.want)
		}
		if tc.holders && (e.Resource != "heavy" || len(e.Holders) != 1 || e.Holders[0].Session != "holder-1") {
			t.Errorf("%s: %+v; want resource heavy and its holder holder-1", tc.name, e)
		}
	}
	// A bad configuration file, and config check's own report.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("project: p\nbakend: file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"slots"}, {"config", "check"}} {
		code, _, errs := cli(t, append([]string{"--json", "--config", bad}, args...)...)
		if e := errorObject(t, "bad config "+args[0], errs); code != 125 || e.ExitCode != 125 || !strings.Contains(e.Error, "bakend") {
			t.Errorf("bad config, %v: exit %d, %+v; want 125 naming bakend", args, code, e)
		}
	}
}

// run's own ends under --json, a stopped tree included, are one JSON
// object on stderr too.
func TestRunJSONStopCause(t *testing.T) {
	tg := fileTarget(t, "")
	code, _, errs := tg.run(t, "--json", "run", "--resource", "heavy", "--timeout", "200ms", "--", "sleep", "30")
	if e := errorObject(t, "timeout", errs); code != 124 || e.ExitCode != 124 || !strings.Contains(e.Error, "--timeout 200ms passed") {
		t.Errorf("--timeout under --json: exit %d, %+v", code, e)
	}
	if code, _, errs := tg.run(t, "run", "--resource", "heavy", "--timeout", "200ms", "--", "sleep", "30"); code != 124 || errs != "governor: --timeout 200ms passed; stopping the command tree (TERM, then KILL after 5s)\n" {
		t.Errorf("--timeout: exit %d, stderr %q", code, errs)
	}
}
