//go:build !governor_noserve

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/redistest"
)

// go test -run TestStatusPage ./cmd/governor/ -screenshot DIR writes PNGs
// of the status page into DIR, for a person to look at.
var screenshotDir = flag.String("screenshot", "", "TestStatusPage: write PNGs of the status page into this directory")

// pageDeadline bounds each wait for the page to show a state. It is
// generous: the page polls every second, and the machine may be loaded.
const pageDeadline = 60 * time.Second

// startBrowser starts one headless chromium for the test and returns its
// context; each tab made from it shares that browser. Without chromium
// the test is skipped, unless GOVERNOR_REQUIRE_BROWSER=1 (CI) makes that
// a failure.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		msg := "no chromium on PATH (apt-get install chromium): the status page is not tested in a browser"
		if os.Getenv("GOVERNOR_REQUIRE_BROWSER") == "1" {
			t.Fatal(msg + ", and GOVERNOR_REQUIRE_BROWSER=1 requires it")
		}
		t.Skip(msg)
	}
	// chromedp gives the browser a fresh --user-data-dir of its own, and
	// removes it after.
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	)
	t.Cleanup(cancelAlloc)
	browser, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	// The first Do starts the browser, on the context that owns it (a
	// deadline there would close the browser when it passes).
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return browser
}

// tab is one browser tab on the status page.
type tab struct {
	t    *testing.T
	ctx  context.Context
	name string // prefix of its screenshots
}

// openPage opens a tab of browser on url.
func openPage(t *testing.T, browser context.Context, url, name string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // opens the tab, on the context that owns it
		t.Fatalf("opening a tab: %v", err)
	}
	b := &tab{t: t, ctx: ctx, name: name}
	b.do("open "+url, chromedp.Navigate(url))
	return b
}

func (b *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, pageDeadline)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v\npage:\n%s", what, err, b.text())
	}
}

// text is what the page shows, for failure messages.
func (b *tab) text() string {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return s
}

// js evaluates expr in the page.
func jsIn[T any](b *tab, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, pageDeadline)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// until waits for the page to show what: expr, a JavaScript expression,
// becomes true.
func (b *tab) until(what, expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, pageDeadline+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(pageDeadline)))
	if err != nil {
		b.t.Fatalf("the page did not show %s within %v (%s): %v\npage:\n%s", what, pageDeadline, expr, err, b.text())
	}
}

// shot writes a PNG of the whole page into -screenshot DIR, if given.
func (b *tab) shot(name string) {
	b.t.Helper()
	if *screenshotDir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, pageDeadline)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(*screenshotDir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	p := filepath.Join(*screenshotDir, b.name+"-"+name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", p)
}

// card is the JavaScript expression of resource's card on the page.
func card(resource string) string {
	return fmt.Sprintf(`document.querySelector('section.res[data-resource=%s]')`, strconv.Quote(resource))
}

// holderShown and waiterAt are expressions true when the page shows
// session holding resource, or waiting at place.
func holderShown(resource, session string) string {
	return fmt.Sprintf(`!!%s?.querySelector('tr.holder[data-session=%s]')`, card(resource), strconv.Quote(session))
}

func waiterAt(resource, session string, place int) string {
	return fmt.Sprintf(`%s?.querySelector('tr.waiter[data-session=%s]')?.dataset.place === "%d"`, card(resource), strconv.Quote(session), place)
}

func waiterCount(resource string, n int) string {
	return fmt.Sprintf(`%s?.querySelectorAll('tr.waiter').length === %d`, card(resource), n)
}

func pageConfig(t *testing.T) string {
	return configFile(t, "project: pagetest\nresources:\n  gpu:\n    limit: 1\n  build:\n    limit: 4\n"+
		"providers:\n  anthropic: {max_concurrency: 4}\n"+
		"budgets:\n  evals-day: {limit: 40, unit: USD, calendar: day, tz: Europe/Paris, providers: [anthropic]}\n"+
		"  spare-hour: {limit: 5, unit: USD, per: 1h}\n")
}

// TestStatusPage drives the status page of a live 'governor serve
// --admin-token-file' in a headless chromium, on the file backend and on
// Redis: a holder appears, a waiter moves up when the slot frees, each
// waiter has an expected wait, the admin pauses the resource (an action
// without the token is refused), cancels a waiter and sets the limit, and
// the page says when the backend or serve stops answering. Chromium
// starts once for the test.
func TestStatusPage(t *testing.T) {
	browser := startBrowser(t)
	t.Run("file", func(t *testing.T) {
		global := []string{"--backend", "file", "--dir", filepath.Join(t.TempDir(), "state"), "--config", pageConfig(t)}
		p := startServe(t, append(global, "serve", "--listen", "127.0.0.1:0", "--timeout", "2s", "--admin-token-file", tokenFile(t))...)
		b := openPage(t, browser, p.base+"/", "file")
		queueOnPage(t, b, global)
		budgetsOnPage(t, b, global)

		// A phone's width: nothing wider than the screen but the
		// tables, which scroll inside their card.
		b.do("phone width", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
		b.until("the page at a phone's width", `document.documentElement.scrollWidth <= window.innerWidth`)
		b.shot("phone")
		b.do("desktop width", chromedp.EmulateViewport(1280, 900))

		// serve stops: the page says so.
		if code, _ := p.stop(t, syscall.SIGTERM); code != 0 {
			t.Fatalf("serve: exit %d", code)
		}
		b.until("that serve does not answer", `document.getElementById("banner").textContent.includes("governor serve does not answer")`)
	})
	t.Run("redis", func(t *testing.T) {
		s := redistest.Start(t)
		global := []string{"--backend", "redis", "--redis-url", s.URL(), "--config", pageConfig(t)}
		p := startServe(t, append(global, "serve", "--listen", "127.0.0.1:0", "--timeout", "1s", "--admin-token-file", tokenFile(t))...)
		b := openPage(t, browser, p.base+"/", "redis")
		queueOnPage(t, b, global)
		budgetsOnPage(t, b, global)

		// Redis stops: the page says the backend does not answer, and
		// comes back by itself when it does.
		s.Stop()
		b.until("that the backend does not answer", `document.getElementById("banner").textContent.includes("The backend does not answer") && document.body.dataset.state === "down"`)
		b.shot("backend-down")
		if err := s.Restart(); err != nil {
			t.Fatal(err)
		}
		b.until("the backend back", `document.getElementById("banner").hidden && document.body.dataset.state === "live"`)
	})
	t.Run("first paint", func(t *testing.T) {
		// No API request is answered (each waits until the test ends):
		// what the page shows once loaded is what serve put in it.
		hold := make(chan struct{})
		s := pageServerWrapped(t, nil, func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(r.URL.Path, "/api/") {
					select {
					case <-hold:
					case <-r.Context().Done():
					}
					return
				}
				h.ServeHTTP(w, r)
			})
		})
		t.Cleanup(func() { close(hold) }) // before the server closes (cleanups run last first)
		b := openPage(t, browser, s.URL+"/", "first-paint")
		b.shot("loaded")
		for what, expr := range map[string]string{
			"the project":                          `document.getElementById("project").textContent === "servetest"`,
			"gpu's card, nobody holding":           card("gpu") + `?.querySelector("td.empty")?.textContent === "nobody holds it"`,
			"live, not connecting":                 `document.getElementById("live").textContent.startsWith("live · read at") && !document.body.innerText.includes("connecting") && !document.body.innerText.includes("Reading the backend")`,
			"no card of the unused exec-run slots": `!` + card("run") + ` && !` + card("run:join"),
		} {
			if !jsIn[bool](b, expr) {
				t.Errorf("once loaded, before any API answer, the page does not show %s (%s); it shows:\n%s", what, expr, b.text())
			}
		}
	})
	t.Run("shares", func(t *testing.T) { sharesOnPage(t, browser) })
	t.Run("rate shares", func(t *testing.T) { rateSharesOnPage(t, browser) })
	t.Run("read-only", func(t *testing.T) {
		s := pageServer(t, nil)
		b := openPage(t, browser, s.URL+"/", "read-only")
		b.until("the page live", `document.body.dataset.state === "live" && !!`+card("gpu"))
		if jsIn[bool](b, controlsShown) {
			t.Error("a read-only page shows controls")
		}
	})
}

// tokenFile writes testToken into a file only its owner reads.
func tokenFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(p, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// tablesFit is true when every table of every card is as wide as its
// card or narrower, and no card is wider than its place.
const tablesFit = `[...document.querySelectorAll("section.res table")].every((t) => t.scrollWidth <= t.parentElement.clientWidth + 1 && t.parentElement.scrollWidth <= t.parentElement.clientWidth + 1) &&
	[...document.querySelectorAll("section.res")].every((c) => c.scrollWidth <= c.clientWidth + 1)`

// controlsShown is true when the page shows a button or a field.
const controlsShown = `[...document.querySelectorAll("button, input")].some((e) => e.getClientRects().length > 0)`

// eventShown is true when the page lists an event of kind on resource by
// someone whose name holds by.
func eventShown(resource, kind, by string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('#events tr.event[data-resource=%s][data-kind=%s] td.by')].some((td) => td.textContent.includes(%s))`,
		strconv.Quote(resource), strconv.Quote(kind), strconv.Quote(by))
}

// queueOnPage makes a holder and two waiters of gpu (limit 1) with the
// CLI, and watches the page b show them, the queue move up, and the
// admin's actions.
func queueOnPage(t *testing.T, b *tab, global []string) {
	t.Helper()
	b.until("the page live, with actions", `document.body.dataset.state === "live" && document.body.dataset.actions === "on" && !!`+card("gpu"))
	if got := jsIn[string](b, `document.getElementById("project").textContent`); got != "pagetest" {
		t.Errorf("project shown: %q", got)
	}
	if jsIn[bool](b, `!!`+card("run")+` || !!`+card("run:join")) {
		t.Error("the exec-run slots run and run:join, unused, have cards")
	}

	code, out, errs := serveCLI(t, append(global, "acquire", "gpu", "--ttl", "2m", "--session", "holder-1")...)
	if code != 0 {
		t.Fatalf("acquire: exit %d: %s", code, errs)
	}
	holder := strings.Fields(out)[0]
	b.until("the holder", holderShown("gpu", "holder-1"))
	b.until("gpu full", card("gpu")+`.querySelector(".nums .used").textContent === "1" && `+card("gpu")+`.querySelector(".bar .fill").classList.contains("full")`)

	w1 := startWaiter(t, append(global, "acquire", "gpu", "--wait-timeout", "2m", "--ttl", "2m", "--session", "waiter-1")...)
	b.until("waiter-1 first in the queue", waiterAt("gpu", "waiter-1", 1))
	// waiter-2 is a run: its command is shown, and cancelled it exits 73.
	w2 := startWaiter(t, append(global, "run", "--resource", "gpu", "--wait-timeout", "2m", "--session", "waiter-2", "--", "sleep", "30")...)
	b.until("waiter-2 second in the queue, with its command", waiterAt("gpu", "waiter-2", 2)+` && `+card("gpu")+`.querySelector('tr.waiter[data-session="waiter-2"] td.command').textContent === "sleep 30"`)
	b.until("no expected wait yet: no hold ended", card("gpu")+`.querySelector('tr.waiter[data-session="waiter-2"] td.expected').textContent === "unknown (no hold history yet)"`)

	// The slot frees: waiter-1 holds it, waiter-2 moves up.
	if code, _, errs := serveCLI(t, append(global, "release", holder)...); code != 0 {
		t.Fatalf("release: exit %d: %s", code, errs)
	}
	if code, errs := w1.wait(t); code != 0 {
		t.Fatalf("waiter-1: exit %d: %s", code, errs)
	}
	b.until("waiter-1 holding", holderShown("gpu", "waiter-1")+` && !`+holderShown("gpu", "holder-1"))
	b.until("waiter-2 moved up", waiterAt("gpu", "waiter-2", 1)+" && "+waiterCount("gpu", 1))
	b.until("waiter-2's expected wait, from holder-1's hold", card("gpu")+`.querySelector('tr.waiter[data-session="waiter-2"] td.expected').textContent.match(/^(~\S+ \(|any moment \(holders past the mean hold of \S+, )from the last 1 hold\)$/) !== null`)
	b.shot("moved-up")

	// At 1,100 px, every table fits its card (nothing cut off behind a
	// scroll bar the eye does not see), and the card's charts draw: use,
	// waiters and cool-offs over the last hour, and the wait-time
	// distribution (waiter-1 waited before its grant).
	b.do("1,100 px", chromedp.EmulateViewport(1100, 900))
	b.until("every table inside its card at 1,100 px", tablesFit)
	b.until("gpu's history chart drawn", card("gpu")+`.querySelector('svg.history path.use')?.getAttribute("d")?.length > 10 && !!`+card("gpu")+`.querySelector('svg.history path.waiters')`)
	b.until("gpu's wait-time distribution drawn", card("gpu")+`.querySelectorAll('svg.waits rect.wbar').length > 0`)
	b.until("the distribution's caption naming its bars by their buckets' edges", card("gpu")+`.querySelector("svg.waits + p.legend").textContent.endsWith("; bars: ≤5ms, ≤25ms, …, ≤1h00m, >1h00m")`)
	b.shot("desktop-1100")
	b.do("desktop width", chromedp.EmulateViewport(1280, 900))

	gpu := `section.res[data-resource="gpu"] `
	msg := `document.getElementById("admin-msg")`
	// A click finds the element and clicks it in one evaluation in the
	// page, once it is there and shown: the page redraws its cards as it
	// polls, and chromedp.Click's node, found a moment before its mouse
	// events, was sometimes gone by then ("Could not find node with
	// given id", CI, both backends in one run). The poll stops at the
	// first true, so the element is clicked once.
	click := func(sel string) {
		t.Helper()
		q, err := json.Marshal(sel)
		if err != nil {
			t.Fatal(err)
		}
		b.until("click "+sel, `(() => { const e = document.querySelector(`+string(q)+`); if (!e || e.disabled || e.offsetParent === null) return false; e.click(); return true })()`)
	}

	// Without the token, pausing is refused, and nothing changes.
	click(gpu + "button.pause")
	b.until("the refusal", msg+`.textContent.includes("refused (HTTP 401)") && `+msg+`.classList.contains("bad")`)
	if code, out, _ := serveCLI(t, append(global, "events", "gpu", "--json")...); code != 0 || strings.Contains(out, `"paused"`) {
		t.Fatalf("after a refused pause, events: exit %d, %s; want no pause", code, out)
	}

	// With it, the resource pauses: the slot freed next is not granted,
	// and waiter-2 keeps its place.
	b.do("type the token", chromedp.SendKeys(chromedp.CSS("#token"), testToken))
	click(gpu + "button.pause")
	b.until("the pause done", msg+`.textContent === "pause gpu: done"`)
	b.until("the pause event, by the admin", eventShown("gpu", "paused", "serve admin from 127.0.0.1:"))
	b.until("gpu shown paused, by the admin", card("gpu")+`.dataset.paused === "true" && `+card("gpu")+`.querySelector(".badge.paused").textContent.includes("serve admin from 127.0.0.1:")`)
	b.shot("paused")
	if code, _, errs := serveCLI(t, append(global, "release", strings.Fields(w1.out.String())[0])...); code != 0 {
		t.Fatalf("release: exit %d: %s", code, errs)
	}
	b.until("gpu free and waiter-2 still waiting, its wait unknown", card("gpu")+`.querySelector(".nums .used").textContent === "0" && `+waiterAt("gpu", "waiter-2", 1)+
		` && `+card("gpu")+`.querySelector('tr.waiter[data-session="waiter-2"] td.expected').textContent === "unknown (paused)"`)
	if w2.exited() >= 0 {
		t.Fatalf("waiter-2 ended while gpu is paused: %s", w2.errb.String())
	}

	// The admin cancels waiter-2: its acquire ends, saying who did it.
	click(gpu + "tr.waiter[data-session=\"waiter-2\"] button.cancel")
	b.until("the cancel done", msg+`.textContent === "cancel gpu: done (1 waiter cancelled)"`)
	if code, errs := w2.wait(t); code != exitcode.Busy || !strings.Contains(errs, "cancelled") || !strings.Contains(errs, "serve admin from 127.0.0.1:") {
		t.Errorf("waiter-2 cancelled: exit %d, %q; want %d naming serve admin", code, errs, exitcode.Busy)
	}
	b.until("nobody waiting", waiterCount("gpu", 0))
	b.until("the cancel event", eventShown("gpu", "cancelled", "serve admin from 127.0.0.1:"))

	click(gpu + "button.resume")
	b.until("the resume done", msg+`.textContent === "resume gpu: done"`)
	b.until("the resume event", eventShown("gpu", "resumed", "serve admin from 127.0.0.1:"))
	b.until("gpu not paused", card("gpu")+`.dataset.paused === "false" && `+card("gpu")+`.querySelector(".badge.paused").hidden`)

	// A limit set live, and back to the configured one.
	b.do("type a limit", chromedp.SendKeys(chromedp.CSS(gpu+"input.limit"), "2"))
	click(gpu + "button.set-limit")
	b.until("the limit set, live", msg+`.textContent === "limit gpu: done" && `+card("gpu")+`.querySelector(".nums .limit").textContent === "2" && `+
		card("gpu")+`.querySelector(".nums .source").textContent.includes("serve admin from 127.0.0.1:")`)
	// Cleared, the limit in force stays until a process asks for
	// another (Governor.SetLimit): the event says so.
	click(gpu + "button.clear-limit")
	b.until("the live limit cleared", `[...document.querySelectorAll('#events tr.event[data-kind="limit"] td.detail')].some((td) => td.textContent.includes("live limit cleared"))`)
	b.shot("actions")

	// A run uses the exec-run slots: their cards show from then on.
	if code, _, errs := serveCLI(t, append(global, "run", "--", "true")...); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	b.until("run's card, once a run used it", `!!`+card("run"))
}

// budgetRow is the JavaScript expression of budget name's row on the page.
func budgetRow(name string) string {
	return fmt.Sprintf(`document.querySelector('#budgets tr.budget[data-budget=%s]')`, strconv.Quote(name))
}

// budgetsOnPage watches the page b show the configured budgets before
// any spend, then a run's spend: spent, limit, burn rate, when it runs
// out at that rate and when it resets.
func budgetsOnPage(t *testing.T, b *tab, global []string) {
	t.Helper()
	b.until("the configured budgets, nothing spent", `!document.getElementById("budgets-section").hidden && `+
		budgetRow("evals-day")+`?.querySelector("td.spent").textContent === "0 USD" && `+
		budgetRow("spare-hour")+`?.querySelector("td.limit").textContent === "5 USD"`)
	c := exec.Command(governorBin(t), append(global, "run", "--provider", "anthropic", "--cost", "2.5", "--", "true")...)
	c.Env = cleanEnv()
	if code, _, errs := execCode(t, c); code != 0 {
		t.Fatalf("run --cost 2.5: exit %d: %s", code, errs)
	}
	row := budgetRow("evals-day")
	b.until("the run's spend on both budgets", row+`?.querySelector("td.spent").textContent === "2.5 USD" && `+
		budgetRow("spare-hour")+`?.querySelector("td.spent").textContent === "2.5 USD"`)
	b.until("limit, use, burn rate, run-out and reset", row+`.querySelector("td.limit").textContent === "40 USD" && `+
		row+`.querySelector("td.used").textContent === "6.3%" && `+
		`/^\d+(\.\d+)? USD\/h$/.test(`+row+`.querySelector("td.burn").textContent) && `+
		`/^(in \S+|not before reset)$/.test(`+row+`.querySelector("td.exhausts").textContent) && `+
		`/^in \d+h\d\dm$|^in \d+m\d\ds$/.test(`+row+`.querySelector("td.reset").textContent)`)
	b.shot("budgets")
}
