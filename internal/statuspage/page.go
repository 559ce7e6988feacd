package statuspage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"errors"
	"net/http"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/view"
	"github.com/governor-dev/governor/internal/words"
)

// The status page of 'governor serve': one HTML page, its script and its
// style, embedded so that the page needs nothing from the network.
//
//go:embed page/index.html page/app.js page/style.css
var pageFiles embed.FS

// Admin are the actions the status page offers an admin, as the
// library provides them (serve's reopening Governor; a fake in tests); by
// names who acted, for the events.
type Admin interface {
	Cancel(ctx context.Context, resource string, sel governor.CancelSelector, by string) ([]governor.Waiter, error)
	Pause(ctx context.Context, resource, by string) error
	Resume(ctx context.Context, resource, by string) error
	SetLimit(ctx context.Context, resource string, limit int, by string) error
}

// Source is what the page and the API read: a *governor.Governor, or
// serve's Reopening one.
type Source interface {
	view.StatusSource
	view.EventSource
	view.RateSource
}

// Page serves the status page (GET /) and the JSON API (/api/v1/...) of
// 'governor serve'. Reads are open to whoever can connect; actions exist
// only with an admin and its token.
type Page struct {
	src        Source
	timeout    time.Duration     // bound on the backend reads and actions of one request
	limits     map[string]int    // the configured limits (view.Statuses)
	locks      map[string]string // the configured mkdir slots (view.SlotsOf)
	budgetConf map[string]view.BudgetConfig
	version    string
	hist       *History // nil: no history kept (an empty one is served)

	// admin is nil on a read-only page: no action is registered.
	admin Admin
	// tokenSum is the SHA-256 of the admin token: requests are compared
	// in constant time, whatever their length.
	tokenSum [sha256.Size]byte
	csrf     *http.CrossOriginProtection
}

// PageOptions say what a Page reads and who may act on it.
type PageOptions struct {
	Timeout time.Duration                // bound on the backend reads and actions of one request
	Limits  map[string]int               // configured limits by resource
	Locks   map[string]string            // configured mkdir slots by resource
	Budgets map[string]view.BudgetConfig // configured spend budgets by name
	Version string                       // governor's, for /api/v1/info
	History *History                     // what serve's polls saw (nil: none)
	// Admin acts for requests carrying Token (not empty); nil: read-only.
	Admin Admin
	Token string
}

// NewPage returns the page of src.
func NewPage(src Source, o PageOptions) *Page {
	p := &Page{src: src, timeout: o.Timeout, limits: o.Limits, locks: o.Locks, budgetConf: o.Budgets, version: o.Version, hist: o.History,
		admin: o.Admin, csrf: http.NewCrossOriginProtection()}
	if o.Admin != nil {
		p.tokenSum = sha256.Sum256([]byte(o.Token))
	}
	return p
}

// Register adds the page and the API to mux.
func (p *Page) Register(mux *http.ServeMux) {
	handle := mux.HandleFunc
	handle("GET /{$}", p.index) // index.html with the first reading in it (first.go)
	handle("GET /app.js", p.file("page/app.js", "text/javascript; charset=utf-8"))
	handle("GET /style.css", p.file("page/style.css", "text/css; charset=utf-8"))
	handle("GET /api/v1/info", p.info)
	handle("GET /api/v1/slots", p.slots)
	handle("GET /api/v1/events", p.events)
	handle("GET /api/v1/history", p.history)
	handle("GET /api/v1/budgets", p.budgets)
	if p.admin == nil {
		return // read-only: the actions are not there at all (404)
	}
	handle("POST /api/v1/pause", p.action(p.pause))
	handle("POST /api/v1/resume", p.action(p.resume))
	handle("POST /api/v1/limit", p.action(p.setLimit))
	handle("POST /api/v1/cancel", p.action(p.cancel))
}

// pageCSP lets the page load its own script and style and talk to its
// own server, nothing else, and not be framed by another site.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (p *Page) file(name, ctype string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := pageFiles.ReadFile(name)
		if err != nil { // cannot happen: the files are embedded
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		pageHeaders(w, ctype)
		_, _ = w.Write(b)
	}
}

// pageHeaders are the headers of the page's files.
func pageHeaders(w http.ResponseWriter, ctype string) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}

// Info is what GET /api/v1/info serves: what the page needs to know
// about serve itself.
type Info struct {
	Project string `json:"project"`
	Version string `json:"version"`
	// Actions is true when serve runs with --admin-token-file.
	Actions bool `json:"actions"`
	// PollSeconds is how often the page reads the API again.
	PollSeconds float64 `json:"poll_seconds"`
}

// pagePoll is how often the page reads /api/v1/slots and /api/v1/events.
const pagePoll = time.Second

func (p *Page) info(w http.ResponseWriter, r *http.Request) {
	writeAPI(w, http.StatusOK, Info{Project: p.src.Project(), Version: p.version, Actions: p.admin != nil, PollSeconds: pagePoll.Seconds()})
}

// slots serves what 'governor slots --json' prints, for the resources
// named by ?resource= (all when none is).
func (p *Page) slots(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()
	sts, err := view.Statuses(ctx, p.src, r.URL.Query()["resource"], p.limits)
	if sts == nil && err != nil {
		writeAPIError(w, readStatus(err), err)
		return
	}
	rss, rerr := view.RateShares(ctx, p.src, r.URL.Query()["resource"])
	if rerr != nil {
		writeAPIError(w, readStatus(rerr), rerr)
		return
	}
	// Resources that could not be read are named under "unreadable".
	writeAPI(w, http.StatusOK, view.SlotsOf(p.src.Project(), sts, p.locks).Skipping(err).WithRates(rss))
}

// events serves what 'governor events --json' prints, for the resources
// named by ?resource= (all when none is) and, with ?since=DURATION, only
// the events of that past duration.
func (p *Page) events(w http.ResponseWriter, r *http.Request) {
	from, err := view.Since(r.URL.Query().Get("since"), time.Now())
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()
	rows, err := view.ReadEvents(ctx, p.src, r.URL.Query()["resource"], from)
	if err != nil {
		// The CLI lists what it could read and exits 125; an API
		// answers one or the other: the page shows the error.
		writeAPIError(w, readStatus(err), err)
		return
	}
	writeAPI(w, http.StatusOK, rows)
}

// readStatus is the HTTP status of a failed read: 404 for a resource
// that is unknown, 400 for a bad name, else 503: the backend did not
// answer.
func readStatus(err error) int {
	var unknown view.UnknownResourceError
	switch {
	case errors.As(err, &unknown):
		return http.StatusNotFound
	case errors.Is(err, governor.ErrInvalid):
		return http.StatusBadRequest
	}
	return http.StatusServiceUnavailable
}

// APIError is the body of every failed API request.
type APIError struct {
	Error string `json:"error"`
}

func writeAPIError(w http.ResponseWriter, code int, err error) {
	writeAPI(w, code, APIError{Error: words.Message(err)})
}

// writeAPI writes v as the CLI's --json does (view.WriteJSON), so that the
// API and the CLI answer the same bytes.
func writeAPI(w http.ResponseWriter, code int, v any) {
	var b bytes.Buffer
	body := []byte(`{"error":"encoding the answer failed"}` + "\n")
	if err := view.WriteJSON(&b, v); err == nil {
		body = b.Bytes()
	} else { // cannot happen: plain data
		code = http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
