//go:build !governor_noserve

package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/internal/view"
)

// TestSlotsRateShares: `governor slots` lists a rate-only provider's
// rate shares after the resources (its local grants, each share's
// wanted, held, burst and used), its --json has them under
// "rate_shares", and the JSON API serves the same; named, it is shown
// alone.
func TestSlotsRateShares(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	global := []string{"--backend", "file", "--dir", dir, "--config", serveConfig(t)}
	b, err := filebackend.New(dir, filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, granted := range []int64{0, 42} {
		a := capacity.RateAsk{ID: "rs-cli", Secret: "rs-cli-secret", TTL: time.Minute, Want: 300, Granted: granted}
		if _, err := b.RateReserve(ctx, governor.RateRequest{Key: governor.Key{Project: "servetest", Resource: "provider:fast"},
			Requests: governor.RateLimit{Rate: 600, Period: time.Minute}, Share: &a}); err != nil {
			t.Fatal(err)
		}
		// A share of its tokens too (capacity.RateAsk.Tokens).
		a = capacity.RateAsk{ID: "ts-cli", Secret: "ts-cli-secret", TTL: time.Minute, Want: 30000, Granted: granted * 100, Tokens: true}
		if _, err := b.RateReserve(ctx, governor.RateRequest{Key: governor.Key{Project: "servetest", Resource: "provider:fast"},
			Tokens: governor.RateLimit{Rate: 60000, Period: time.Minute}, Share: &a}); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := serveCLI(t, append(global, "slots")...)
	if code != 0 {
		t.Fatalf("slots: exit %d: %s", code, errs)
	}
	for _, want := range []string{`(?m)^provider:fast  rate shares 1  local grants 42  token shares 1  local tokens 4200$`,
		`(?m)^  rs-cli +300 +300 +300 +42 +\d+s$`, `(?m)^  TOKEN SHARE +WANTED`, `(?m)^  ts-cli +30000 +30000 +30000 +4200 +\d+s$`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("slots:\n%s\nwant a line matching %s", out, want)
		}
	}
	// Named, the rate-only provider is no unknown resource.
	code, out, errs = serveCLI(t, append(global, "slots", "provider:fast")...)
	if want := `(?m)^provider:fast  rate shares 1  local grants 42  token shares 1  local tokens 4200$`; code != 0 || !regexp.MustCompile(want).MatchString(out) {
		t.Errorf("slots provider:fast: exit %d:\n%s%s\nwant a line matching %s", code, out, errs, want)
	}
	// A project of rate-only providers: its shares are what it holds,
	// not a line that says nothing is.
	only := []string{"--backend", "file", "--dir", dir, "--config", configFile(t, "project: servetest\n")}
	for _, c := range []struct{ args, first, then string }{
		{"slots", "no slot held, nobody waiting in project servetest (2 resources;", "\n\nprovider:fast  rate shares 1"},
		{"slots provider:fast", "provider:fast  rate shares 1", ""},
	} {
		code, out, errs = serveCLI(t, append(only, strings.Fields(c.args)...)...)
		if code != 0 || !strings.HasPrefix(out, c.first) || !strings.Contains(out, c.then) {
			t.Errorf("%s in a project of rate-only providers: exit %d:\n%s%s\nwant it to begin %q, then its rate shares", c.args, code, out, errs, c.first)
		}
	}
	code, out, errs = serveCLI(t, append(global, "slots", "--json")...)
	if code != 0 {
		t.Fatalf("slots --json: exit %d: %s", code, errs)
	}
	var s view.Slots
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.RateShares) != 1 || s.RateShares[0].Resource != "provider:fast" || s.RateShares[0].LocalGrants != 42 ||
		len(s.RateShares[0].Shares) != 1 || s.RateShares[0].Shares[0].Used != 42 || s.RateShares[0].Shares[0].Held != 300 ||
		s.RateShares[0].LocalTokens != 4200 || len(s.RateShares[0].TokenShares) != 1 || s.RateShares[0].TokenShares[0].Used != 4200 ||
		s.RateShares[0].TokenShares[0].Held != 30000 {
		t.Fatalf("slots --json rate_shares = %+v", s.RateShares)
	}
	p := startServe(t, append(global, "serve", "--listen", "127.0.0.1:0", "--timeout", "5s")...)
	var api, cli any
	getJSON(t, p.base+"/api/v1/slots", 200, &api)
	if err := json.Unmarshal([]byte(out), &cli); err != nil {
		t.Fatal(err)
	}
	if a, c := dropAges(api), dropAges(cli); !reflect.DeepEqual(a, c) {
		t.Errorf("/api/v1/slots differs from slots --json:\napi %v\ncli %v", a, c)
	}
}
