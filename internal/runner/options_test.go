package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

func TestParseResource(t *testing.T) {
	limits := map[string]int{"heavy": 2, "run": 4, "provider:anthropic": 2}
	for _, tc := range []struct {
		spec   string
		want   Resource
		errHas string
	}{
		{spec: "heavy", want: Resource{Name: "heavy"}},
		{spec: "heavy:2", want: Resource{Name: "heavy", Weight: 2}},
		{spec: "issue:2316", want: Resource{Name: "issue:2316"}}, // "issue" is not configured
		{spec: "issue:2316:1", want: Resource{Name: "issue:2316", Weight: 1}},
		{spec: "provider:anthropic", want: Resource{Name: "provider:anthropic"}},
		{spec: "provider:anthropic:2", want: Resource{Name: "provider:anthropic", Weight: 2}},
		{spec: "gpu:x", want: Resource{Name: "gpu:x"}},
		{spec: "heavy:", want: Resource{Name: "heavy:"}},
		{spec: "heavy:0", errHas: "weight 0; allowed: 1"},
		{spec: "heavy:99999999999999999999", errHas: "allowed: 1"},
		{spec: "", errHas: "empty resource name"},
		{spec: "two words", errHas: "allowed: printable characters without white space"},
		{spec: "a{b}", errHas: "not allowed"},
	} {
		got, err := ParseResource(tc.spec, limits)
		if tc.errHas != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errHas) || !strings.Contains(err.Error(), "--resource") {
				t.Errorf("ParseResource(%q) = %v, %v; want an error about --resource containing %q", tc.spec, got, err, tc.errHas)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseResource(%q) = %+v, %v; want %+v", tc.spec, got, err, tc.want)
		}
	}
}

func TestPlanErrorsNameTheValueAndWhatIsAllowed(t *testing.T) {
	base := func() Options {
		return Options{Args: []string{"true"}, Resources: []string{"heavy"}, Limits: map[string]int{"heavy": 1}}
	}
	for _, tc := range []struct {
		name string
		mod  func(*Options)
		has  []string
	}{
		{"no command", func(o *Options) { o.Args = nil }, []string{"no command", "--"}},
		{"if-busy", func(o *Options) { o.IfBusy = "later" }, []string{`"later"`, "fail, wait or skip"}},
		{"negative timeout", func(o *Options) { o.Timeout = -time.Second }, []string{"--timeout -1s", "positive"}},
		{"negative grace", func(o *Options) { o.KillGrace = -time.Second }, []string{"--kill-grace -1s", "positive"}},
		{"negative wait", func(o *Options) { o.WaitTimeout = -time.Second }, []string{"--wait-timeout -1s", "positive"}},
		{"wait-timeout with fail", func(o *Options) { o.IfBusy, o.WaitTimeout = "fail", time.Second }, []string{"--wait-timeout 1s", "--if-busy wait"}},
		{"limit", func(o *Options) { o.Limit = -1 }, []string{"--limit -1", "1 to"}},
		{"no limit", func(o *Options) { o.Resources = []string{"gpu"} }, []string{`"gpu" has no limit`, "--limit N", "resources.gpu.limit"}},
		{"twice", func(o *Options) { o.Resources = []string{"heavy", "heavy"} }, []string{"heavy is given twice"}},
		{"too heavy", func(o *Options) { o.Resources = []string{"heavy:3"} }, []string{"weight 3", "limit 1", "heavy:3:1"}},
		{"exclusive and weight", func(o *Options) {
			o.Exclusive, o.Resources, o.Limits = true, []string{"heavy:2"}, map[string]int{"heavy": 3}
		}, []string{"--exclusive with weight 2", "whole limit (3)"}},
		{"no resource", func(o *Options) { o.Resources = nil }, []string{"--resource", "run.max_concurrent_runs"}},
		{"empty provider", func(o *Options) { o.Providers = []string{""} }, []string{"--provider"}},
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

func TestPlanResolvesLimitsAndWeights(t *testing.T) {
	o := Options{Args: []string{"true"}, Resources: []string{"heavy", "gpu:2:2"}, Providers: []string{"anthropic"},
		Limits: map[string]int{"heavy": 1, "provider:anthropic": 2}, Limit: 4}
	items, err := plan(&o)
	if err != nil {
		t.Fatal(err)
	}
	got := []item{}
	for _, it := range items {
		got = append(got, item{name: it.name, weight: it.weight, limit: it.limit})
	}
	want := []item{{name: "heavy", weight: 1, limit: 1}, {name: "gpu:2", weight: 2, limit: 4}, {name: "provider:anthropic", weight: 1, limit: 2}}
	if len(got) != len(want) {
		t.Fatalf("plan = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("item %d = %+v, want %+v", i, got[i], want[i])
		}
	}

	o = Options{Args: []string{"true"}, Limits: map[string]int{"run": 4, "heavy": 3}, Exclusive: true}
	if items, err = plan(&o); err != nil || len(items) != 1 || items[0].name != DefaultResource || items[0].weight != 4 {
		t.Fatalf("default resource with --exclusive: %+v, %v; want run with weight 4", items, err)
	}
	// --limit does not override a configured limit.
	o = Options{Args: []string{"true"}, Resources: []string{"heavy"}, Limits: map[string]int{"heavy": 3}, Limit: 1, Exclusive: true}
	if items, err = plan(&o); err != nil || items[0].weight != 3 {
		t.Fatalf("configured limit with --limit: %+v, %v; want weight 3", items, err)
	}
}

func TestHeldRoundTrip(t *testing.T) {
	in := []HeldLease{
		{Key: governor.Key{Project: "p-1", Resource: "heavy"}, LeaseID: "aa", Token: 7},
		{Key: governor.Key{Project: "p.2", Resource: "odd,name=with%/slash:x"}, LeaseID: "bb", Token: 1 << 60},
	}
	held, tokens := FormatHeld(in)
	if want := "p-1/heavy=aa,p.2/odd%2Cname=with%25/slash:x=bb"; held != want {
		t.Fatalf("GOVERNOR_HELD = %q, want %q", held, want)
	}
	out, err := ParseHeld(held, tokens)
	if err != nil || len(out) != 2 || out[0] != in[0] || out[1] != in[1] {
		t.Fatalf("ParseHeld = %+v, %v; want %+v", out, err, in)
	}
	out, err = ParseHeld("p/a=1,garbage,/x=2,p/b=,p/c=3", "p/a=x")
	if err == nil || len(out) != 2 || out[0].Key.Resource != "a" || out[0].Token != 0 || out[1].Key.Resource != "c" {
		t.Fatalf("malformed: %+v, %v; want a and c kept and an error", out, err)
	}
	if out, err := ParseHeld("", ""); err != nil || out != nil {
		t.Fatalf("empty: %+v, %v", out, err)
	}
}

func TestChildEnv(t *testing.T) {
	env := []string{"PATH=/bin", EnvHeld + "=old", "X=1", EnvSession + "=old", EnvToken + "=old", EnvRunIDs + "=old"}
	got := childEnv(env, []HeldLease{{Key: governor.Key{Project: "p", Resource: "r"}, LeaseID: "id", Token: 3}}, "sess", "a b")
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

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"issue:2316": "issue:2316", "a b": "'a b'", "it's": `'it'\''s'`, "": "''"} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestResolveIfBusy(t *testing.T) {
	for _, tc := range []struct {
		ifBusy  string
		timeout time.Duration
		want    string // "" for an error
	}{
		{"", 0, IfBusyFail},
		{"", time.Second, IfBusyWait}, // a wait timeout implies waiting
		{IfBusyWait, 0, IfBusyWait},
		{IfBusyWait, time.Second, IfBusyWait},
		{IfBusySkip, 0, IfBusySkip},
		{IfBusyFail, time.Second, ""},
		{IfBusySkip, time.Second, ""},
		{"", -time.Second, ""},
		{"later", 0, ""},
	} {
		got, err := ResolveIfBusy(tc.ifBusy, tc.timeout)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("ResolveIfBusy(%q, %v) = %q, %v; want %q", tc.ifBusy, tc.timeout, got, err, tc.want)
		}
	}
}

func TestSession(t *testing.T) {
	env := []string{"GOVERNOR_SESSION=first", "GOVERNOR_SESSION=last"}
	if got := Session("", env); got != "last" {
		t.Errorf("Session from env = %q; want the last, as os/exec", got)
	}
	if got := Session("flag", env); got != "flag" {
		t.Errorf("Session with --session = %q", got)
	}
	if got := Session("", nil); got != "" {
		t.Errorf("Session with nothing = %q; want governor's default", got)
	}
}

// The exec-run rule (see DefaultResource): what each kind of run takes.
func TestPlanExecRuns(t *testing.T) {
	limits := map[string]int{"run": 1, "run:join": 3, "heavy": 1}
	type took struct {
		name   string
		weight int
	}
	for _, tc := range []struct {
		name string
		o    Options
		want []took
	}{
		{"plain", Options{}, []took{{"run", 1}, {"run:join", 3}}},
		{"plain exclusive", Options{Exclusive: true}, []took{{"run", 1}, {"run:join", 3}}},
		{"shareable", Options{Shareable: true}, []took{{"run", 1}}},
		{"join", Options{Join: true}, []took{{"run:join", 1}}},
		{"resource only", Options{Resources: []string{"heavy"}}, []took{{"heavy", 1}}},
		{"join with resource", Options{Join: true, Resources: []string{"heavy"}}, []took{{"heavy", 1}, {"run:join", 1}}},
	} {
		o := tc.o
		o.Args, o.Limits = []string{"true"}, limits
		items, err := plan(&o)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var got []took
		for _, it := range items {
			got = append(got, took{it.name, it.weight})
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: takes %v, want %v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: takes %v, want %v", tc.name, got, tc.want)
			}
		}
	}
	o := Options{Args: []string{"true"}, Join: true, Limits: map[string]int{"run": 1}}
	if _, err := plan(&o); err == nil || !strings.Contains(err.Error(), "run.max_concurrent_runs is 1") {
		t.Errorf("--join at max 1: %v; want an error naming run.max_concurrent_runs", err)
	}
}
