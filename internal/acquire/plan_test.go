package acquire

import (
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
)

// catalog is a catalog of limits: provider:NAME as a provider's
// max_concurrency, run:join as run.max_concurrent_runs-1 (absent: 1 run),
// the rest as resources; run itself is always there (limit 1).
func catalog(limits map[string]int) *config.Catalog {
	c := config.Config{Resources: map[string]config.Resource{}, Providers: map[string]config.Provider{}}
	one := 1
	c.Run.MaxConcurrentRuns = &one
	for name, n := range limits {
		switch {
		case name == DefaultResource:
		case name == JoinResource:
			runs := n + 1
			c.Run.MaxConcurrentRuns = &runs
		case strings.HasPrefix(name, "provider:"):
			c.Providers[strings.TrimPrefix(name, "provider:")] = config.Provider{MaxConcurrency: &n}
		default:
			c.Resources[name] = config.Resource{Limit: n}
		}
	}
	return (&config.Loaded{Config: c}).Catalog()
}

func TestParseResource(t *testing.T) {
	limits := catalog(map[string]int{"heavy": 2, "run": 4, "run:join": 3, "provider:anthropic": 2})
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
		{spec: "heavy:", errHas: `weight "" after the configured resource heavy`},
		{spec: "run:join", want: Resource{Name: "run:join"}}, // both configured
		{spec: "heavy:abc", errHas: `weight "abc" after the configured resource heavy; allowed: a whole number`},
		{spec: "provider:anthropic:x", errHas: `weight "x" after the configured resource provider:anthropic`},
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
	type Options = Request
	limits := map[string]int{"heavy": 1}
	base := func() Options {
		return Options{Resources: []string{"heavy"}}
	}
	for _, tc := range []struct {
		name string
		mod  func(*Options)
		has  []string
	}{
		{"if-busy", func(o *Options) { o.IfBusy = "later" }, []string{`"later"`, "fail, wait or skip"}},
		{"negative wait", func(o *Options) { o.WaitTimeout = -time.Second }, []string{"--wait-timeout -1s", "positive"}},
		{"wait-timeout with fail", func(o *Options) { o.IfBusy, o.WaitTimeout = "fail", time.Second }, []string{"--wait-timeout 1s", "--if-busy wait"}},
		{"limit", func(o *Options) { o.Limit = -1 }, []string{"--limit -1", "1 to"}},
		{"provider without config", func(o *Options) { o.Resources, o.Providers = nil, []string{"anthropic"} }, []string{`provider "anthropic"`, "providers.anthropic.max_concurrency"}},
		{"provider slot without config", func(o *Options) { o.Resources = []string{"provider:anthropic"} }, []string{`provider "anthropic"`, "providers.anthropic.max_concurrency", "--limit N"}},
		{"twice", func(o *Options) { o.Resources = []string{"heavy", "heavy"} }, []string{"heavy is given twice"}},
		{"too heavy", func(o *Options) { o.Resources = []string{"heavy:3"} }, []string{"weight 3", "limit 1", "heavy:3:1"}},
		{"exclusive and weight", func(o *Options) {
			o.Exclusive, o.Resources, limits = true, []string{"heavy:2"}, map[string]int{"heavy": 3}
		}, []string{"--exclusive with weight 2", "whole limit (3)"}},
		{"no resource", func(o *Options) { o.Resources = nil }, []string{"no resource to hold"}},
		{"empty provider", func(o *Options) { o.Providers = []string{""} }, []string{"--provider"}},
		{"tokens", func(o *Options) { o.Tokens = -1 }, []string{"--tokens -1", "0 or more"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base()
			limits = map[string]int{"heavy": 1}
			tc.mod(&o)
			_, err := NewPlan(catalog(limits), o)
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

// A resource with no limit configured and no --limit is planned without
// one: Acquire asks the limit stored with it, else 1 (a mutex); its
// weight is checked then.
func TestPlanNoLimitIsStoredOrMutex(t *testing.T) {
	p, err := NewPlan(catalog(nil), Request{Resources: []string{"gpu:x"}, Exclusive: true})
	if err != nil {
		t.Fatalf("no limit anywhere: %v; want a plan (a mutex)", err)
	}
	if it := p.Items()[0]; it.Limit != 0 || it.Origin != "" {
		t.Fatalf("item %+v; want limit 0 (stored, else 1) and no origin", it)
	}
}

// items plans req on a catalog of limits.
func items(t *testing.T, limits map[string]int, req Request) ([]*Item, error) {
	t.Helper()
	p, err := NewPlan(catalog(limits), req)
	if err != nil {
		return nil, err
	}
	return p.Items(), nil
}

func TestPlanResolvesLimitsAndWeights(t *testing.T) {
	type item struct {
		name          string
		weight, limit int
	}
	its, err := items(t, map[string]int{"heavy": 1, "provider:anthropic": 2}, Request{Resources: []string{"heavy", "gpu:2:2"}, Providers: []string{"anthropic"}, Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	got := []item{}
	for _, it := range its {
		got = append(got, item{name: it.Name, weight: it.Weight, limit: it.Limit})
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

	if its, err = items(t, map[string]int{"heavy": 3}, Request{ExecRun: true, Exclusive: true}); err != nil || len(its) != 1 || its[0].Name != DefaultResource || its[0].Weight != 1 {
		t.Fatalf("default resource with --exclusive: %+v, %v; want run with weight 1", its, err)
	}
	// --limit does not override a configured limit.
	if its, err = items(t, map[string]int{"heavy": 3}, Request{Resources: []string{"heavy"}, Limit: 1, Exclusive: true}); err != nil || its[0].Weight != 3 {
		t.Fatalf("configured limit with --limit: %+v, %v; want weight 3", its, err)
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

// The exec-run rule (see DefaultResource): what each kind of run takes.
func TestPlanExecRuns(t *testing.T) {
	limits := map[string]int{"run": 1, "run:join": 3, "heavy": 1}
	type took struct {
		name   string
		weight int
	}
	for _, tc := range []struct {
		name string
		o    Request
		want []took
	}{
		{"plain", Request{ExecRun: true}, []took{{"run", 1}, {"run:join", 3}}},
		{"plain exclusive", Request{ExecRun: true, Exclusive: true}, []took{{"run", 1}, {"run:join", 3}}},
		{"shareable", Request{Shareable: true}, []took{{"run", 1}}},
		{"join", Request{Join: true}, []took{{"run:join", 1}}},
		{"resource only", Request{Resources: []string{"heavy"}}, []took{{"heavy", 1}}},
		{"join with resource", Request{Join: true, Resources: []string{"heavy"}}, []took{{"heavy", 1}, {"run:join", 1}}},
	} {
		its, err := items(t, limits, tc.o)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var got []took
		for _, it := range its {
			got = append(got, took{it.Name, it.Weight})
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
	if _, err := items(t, map[string]int{"run": 1}, Request{Join: true}); err == nil || !strings.Contains(err.Error(), "run.max_concurrent_runs is 1") {
		t.Errorf("--join at max 1: %v; want an error naming run.max_concurrent_runs", err)
	}
}
