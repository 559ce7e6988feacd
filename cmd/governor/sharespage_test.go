//go:build !governor_noserve

package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/filebackend"
)

// sharesOnPage: the status page shows each process's capacity lease
// (wanted, held, used) on its resource's card, and no shares table
// where there are none.
func sharesOnPage(t *testing.T, browser context.Context) {
	dir := filepath.Join(t.TempDir(), "state")
	s := pageServerIn(t, dir, nil, func(h http.Handler) http.Handler { return h })
	b, err := filebackend.New(dir, filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	key := governor.Key{Project: "servetest", Resource: "gpu"}
	const secret = "0123456789abcdef0123456789abcdef"
	id := governor.LeaseIDOf(secret)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ask := func(a capacity.Ask) *capacity.Share {
		res, err := b.Acquire(ctx, governor.Request{Key: key, ID: id, Secret: secret, Limit: 3, Weight: 1, TTL: time.Minute,
			Mode: governor.Fail, Declaration: governor.Declaration{Session: "worker-1", Host: "box1"}, Capacity: &a})
		if err != nil || res.Share == nil {
			t.Fatalf("capacity lease %+v: %+v, %v", a, res, err)
		}
		return res.Share
	}
	if sh := ask(capacity.Ask{Want: 2, InUse: 1}); sh.Share != 2 {
		t.Fatalf("capacity lease: %+v", sh)
	}
	p := openPage(t, browser, s.URL+"/", "shares")
	row := fmt.Sprintf(`%s?.querySelector('tr.share[data-lease=%s]')`, card("gpu"), strconv.Quote(id))
	p.until("the share on gpu's card", "!!"+row)
	for what, expr := range map[string]string{
		"its session": row + `.querySelector("td.session").textContent === "worker-1"`,
		"wanted 2":    row + `.querySelector("td.wanted").textContent === "2"`,
		"held 2":      row + `.querySelector("td.held").textContent === "2"`,
		"used 1":      row + `.querySelector("td.used").textContent === "1"`,
		"the heading": `[...` + card("gpu") + `.querySelectorAll("h3")].some((h) => h.textContent === "Shares" && !h.hidden)`,
	} {
		if !jsIn[bool](p, expr) {
			t.Errorf("the share's row does not show %s (%s); the page shows:\n%s", what, expr, p.text())
		}
	}
	p.shot("shares")
	ask(capacity.Ask{Release: true})
	p.until("no shares once released", `!`+row+` && [...`+card("gpu")+`.querySelectorAll("h3")].every((h) => h.textContent !== "Shares" || h.hidden)`)
}

// rateSharesOnPage: the status page lists each process's rate share of
// a provider with no slots of its own (wanted, held, burst, used: its
// local grants) under the key's local grants, and hides the section
// once the shares are gone and none were counted.
func rateSharesOnPage(t *testing.T, browser context.Context) {
	dir := filepath.Join(t.TempDir(), "state")
	s := pageServerIn(t, dir, nil, func(h http.Handler) http.Handler { return h })
	b, err := filebackend.New(dir, filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	key := governor.Key{Project: "servetest", Resource: "provider:fast"}
	rpm := governor.RateLimit{Rate: 600, Period: time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ask := func(a capacity.RateAsk) {
		a.ID, a.Secret, a.TTL = "rs-page", "rs-page-secret", time.Minute
		if _, err := b.RateReserve(ctx, governor.RateRequest{Key: key, Requests: rpm, Share: &a}); err != nil {
			t.Fatalf("rate share %+v: %v", a, err)
		}
	}
	ask(capacity.RateAsk{Want: 300})
	ask(capacity.RateAsk{Want: 300, Granted: 42})
	for _, granted := range []int64{0, 4200} { // a share of its tokens too: the first report counts nothing
		tokens := capacity.RateAsk{ID: "ts-page", Secret: "ts-page-secret", TTL: time.Minute, Want: 30000, Granted: granted, Tokens: true}
		if _, err := b.RateReserve(ctx, governor.RateRequest{Key: key, Tokens: governor.RateLimit{Rate: 60000, Period: time.Minute}, Share: &tokens}); err != nil {
			t.Fatal(err)
		}
	}
	p := openPage(t, browser, s.URL+"/", "rate shares")
	row := `document.querySelector('#rates tr.rate-share[data-resource="provider:fast"][data-lease="rs-page"]')`
	trow := `document.querySelector('#rates tr.rate-share[data-resource="provider:fast"][data-lease="ts-page"][data-of="tokens"]')`
	p.until("the rate share", "!!"+row)
	for what, expr := range map[string]string{
		"wanted 300":        row + `.querySelector("td.wanted").textContent === "300"`,
		"held 300":          row + `.querySelector("td.held").textContent === "300"`,
		"burst 300":         row + `.querySelector("td.burst").textContent === "300"`,
		"used 42":           row + `.querySelector("td.used").textContent === "42"`,
		"the tokens' share": "!!" + trow + ` && ` + trow + `.querySelector("td.held").textContent === "30000" && ` + trow + `.querySelector("td.used").textContent === "4200"`,
		"the grants":        `document.querySelector('#rates tr.rate-key[data-resource="provider:fast"] td.grants').textContent === "42 granted locally · 4200 tokens taken locally"`,
		"the section":       `!document.getElementById("rates-section").hidden`,
	} {
		if !jsIn[bool](p, expr) {
			t.Errorf("the rate share's row does not show %s (%s); the page shows:\n%s", what, expr, p.text())
		}
	}
	p.shot("rate-shares")
}
