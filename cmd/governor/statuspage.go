package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor"
)

// The status page of 'governor serve': one HTML page, its script and its
// style, embedded so that the page needs nothing from the network.
//
//go:embed page/index.html page/app.js page/style.css
var pageFiles embed.FS

// adminActions are the actions the status page offers an admin, as the
// library provides them (serve's reopening Governor; a fake in tests); by
// names who acted, for the events.
type adminActions interface {
	Cancel(ctx context.Context, resource string, sel governor.CancelSelector, by string) ([]governor.Waiter, error)
	Pause(ctx context.Context, resource, by string) error
	Resume(ctx context.Context, resource, by string) error
	SetLimit(ctx context.Context, resource string, limit int, by string) error
}

// pageSource is what the page and the API read.
type pageSource interface {
	statusSource
	eventSource
}

// statusPage serves the status page (GET /) and the JSON API
// (/api/v1/...) of 'governor serve'. Reads are open to whoever can
// connect; actions exist only with an admin and its token.
type statusPage struct {
	a       *app
	src     pageSource
	timeout time.Duration // bound on the backend reads and actions of one request

	// admin is nil on a read-only page: no action is registered.
	admin adminActions
	// tokenSum is the SHA-256 of the admin token: requests are compared
	// in constant time, whatever their length.
	tokenSum [sha256.Size]byte
	csrf     *http.CrossOriginProtection
	// loopbackHosts refuses requests for another host than localhost or
	// a loopback IP: serve listens on loopback, and a request naming
	// another host comes from a page of another site whose name was
	// pointed at 127.0.0.1 (DNS rebinding), which could read the API.
	loopbackHosts bool
}

// newStatusPage returns the page of src. With admin, actions are served
// to requests carrying token (which must not be empty).
func newStatusPage(a *app, src pageSource, timeout time.Duration, admin adminActions, token string) *statusPage {
	p := &statusPage{a: a, src: src, timeout: timeout, admin: admin, csrf: http.NewCrossOriginProtection()}
	if admin != nil {
		p.tokenSum = sha256.Sum256([]byte(token))
	}
	return p
}

// register adds the page and the API to mux.
func (p *statusPage) register(mux *http.ServeMux) {
	handle := func(pattern string, h http.HandlerFunc) { mux.HandleFunc(pattern, p.hostChecked(h)) }
	handle("GET /{$}", p.file("page/index.html", "text/html; charset=utf-8"))
	handle("GET /app.js", p.file("page/app.js", "text/javascript; charset=utf-8"))
	handle("GET /style.css", p.file("page/style.css", "text/css; charset=utf-8"))
	handle("GET /api/v1/info", p.info)
	handle("GET /api/v1/slots", p.slots)
	handle("GET /api/v1/events", p.events)
	if p.admin == nil {
		return // read-only: the actions are not there at all (404)
	}
	handle("POST /api/v1/pause", p.action(p.pause))
	handle("POST /api/v1/resume", p.action(p.resume))
	handle("POST /api/v1/limit", p.action(p.setLimit))
	handle("POST /api/v1/cancel", p.action(p.cancel))
}

// hostChecked refuses, with loopbackHosts, a request for another host
// than localhost or a loopback IP (403).
func (p *statusPage) hostChecked(h http.HandlerFunc) http.HandlerFunc {
	if !p.loopbackHosts {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hp, _, err := net.SplitHostPort(host); err == nil {
			host = hp
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if ip := net.ParseIP(host); !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
			writeAPIError(w, http.StatusForbidden, fmt.Errorf("refused: this serve listens on loopback and answers for localhost or a loopback address only, not for host %q (another site's name pointed at this machine); open http://127.0.0.1:PORT/, or have a proxy send such a Host", r.Host))
			return
		}
		h(w, r)
	}
}

// pageCSP lets the page load its own script and style and talk to its
// own server, nothing else, and not be framed by another site.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (p *statusPage) file(name, ctype string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := pageFiles.ReadFile(name)
		if err != nil { // cannot happen: the files are embedded
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", ctype)
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Security-Policy", pageCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		_, _ = w.Write(b)
	}
}

// infoJSON is what GET /api/v1/info serves: what the page needs to know
// about serve itself.
type infoJSON struct {
	Project string `json:"project"`
	Version string `json:"version"`
	// Actions is true when serve runs with --admin-token-file.
	Actions bool `json:"actions"`
	// PollSeconds is how often the page reads the API again.
	PollSeconds float64 `json:"poll_seconds"`
}

// pagePoll is how often the page reads /api/v1/slots and /api/v1/events.
const pagePoll = time.Second

// pageEventsSince is how far back the page shows events.
const pageEventsSince = 24 * time.Hour

func (p *statusPage) info(w http.ResponseWriter, r *http.Request) {
	writeAPI(w, http.StatusOK, infoJSON{Project: p.src.Project(), Version: version(), Actions: p.admin != nil, PollSeconds: pagePoll.Seconds()})
}

// slots serves what 'governor slots --json' prints, for the resources
// named by ?resource= (all when none is).
func (p *statusPage) slots(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()
	sts, err := p.a.statuses(ctx, p.src, r.URL.Query()["resource"])
	if err != nil {
		writeAPIError(w, readStatus(err), err)
		return
	}
	writeAPI(w, http.StatusOK, p.a.slotsReport(p.src.Project(), sts))
}

// events serves what 'governor events --json' prints, for the resources
// named by ?resource= (all when none is) and, with ?since=DURATION, only
// the events of that past duration.
func (p *statusPage) events(w http.ResponseWriter, r *http.Request) {
	var from time.Time
	if s := r.URL.Query().Get("since"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			writeAPIError(w, http.StatusBadRequest, fmt.Errorf("since=%q; allowed: a positive duration such as 90s, 1h", s))
			return
		}
		from = time.Now().Add(-d)
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()
	rows, err := readEvents(ctx, p.src, r.URL.Query()["resource"], from)
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
	var unknown unknownResourceError
	switch {
	case errors.As(err, &unknown):
		return http.StatusNotFound
	case errors.Is(err, governor.ErrInvalid):
		return http.StatusBadRequest
	}
	return http.StatusServiceUnavailable
}

// apiError is the body of every failed API request.
type apiError struct {
	Error string `json:"error"`
}

func writeAPIError(w http.ResponseWriter, code int, err error) {
	writeAPI(w, code, apiError{Error: strings.TrimPrefix(err.Error(), "governor: ")})
}

// writeAPI writes v as the CLI's --json does (writeJSON), so that the
// API and the CLI answer the same bytes.
func writeAPI(w http.ResponseWriter, code int, v any) {
	var b bytes.Buffer
	body := []byte(`{"error":"encoding the answer failed"}` + "\n")
	if err := writeJSON(&b, v); err == nil {
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

// actionRequest is the JSON body of every action. Resource is always
// needed; Limit by /api/v1/limit (0 returns to the configured limit);
// Waiter or Session (one of them) by /api/v1/cancel.
type actionRequest struct {
	Resource string `json:"resource"`
	Limit    *int   `json:"limit,omitempty"`
	Waiter   string `json:"waiter,omitempty"`
	Session  string `json:"session,omitempty"`
}

// actionResult is the answer to an action that was done.
type actionResult struct {
	Action   string `json:"action"`
	Resource string `json:"resource"`
	By       string `json:"by"`
	// Limit is the limit set (0: back to the configured one), for
	// /api/v1/limit.
	Limit *int `json:"limit,omitempty"`
	// Cancelled are the ids of the waiters withdrawn, for /api/v1/cancel.
	Cancelled []string `json:"cancelled,omitempty"`
}

// maxActionBody bounds an action's body: a few names and a number.
const maxActionBody = 64 << 10

// action checks what every action request must carry, in this order:
// that it is not a cross-origin browser request (403), the admin token
// in "Authorization: Bearer TOKEN" (401), a JSON body (415) naming a
// valid resource (400); then runs do with the body and who acted.
func (p *statusPage) action(do func(ctx context.Context, req actionRequest, res *actionResult) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := p.csrf.Check(r); err != nil {
			writeAPIError(w, http.StatusForbidden, fmt.Errorf("refused: a cross-origin request (Origin %q, Sec-Fetch-Site %q): actions come from the page served here, or from a client that is not a browser",
				r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site")))
			return
		}
		if !p.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="governor serve"`)
			writeAPIError(w, http.StatusUnauthorized, errors.New("refused: the admin token is missing or wrong; send it as 'Authorization: Bearer TOKEN' (the token is in the file given to serve --admin-token-file)"))
			return
		}
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			writeAPIError(w, http.StatusUnsupportedMediaType, fmt.Errorf("Content-Type %q; allowed: application/json", ct))
			return
		}
		var req actionRequest
		dec := json.NewDecoder(io.LimitReader(r.Body, maxActionBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeAPIError(w, http.StatusBadRequest, fmt.Errorf("the body is not an action: %v; send a JSON object such as {\"resource\": \"gpu\"}", err))
			return
		}
		if err := governor.ValidateResource(req.Resource); err != nil {
			writeAPIError(w, http.StatusBadRequest, err)
			return
		}
		res := actionResult{Action: strings.TrimPrefix(r.URL.Path, "/api/v1/"), Resource: req.Resource, By: "serve admin from " + r.RemoteAddr}
		ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
		defer cancel()
		if err := do(ctx, req, &res); err != nil {
			writeAPIError(w, actionStatus(err), err)
			return
		}
		writeAPI(w, http.StatusOK, res)
	}
}

// actionStatus is the HTTP status of a failed action: 400 for bad input,
// 404 for a cancel that found no such waiter, else 503: the backend did
// not answer.
func actionStatus(err error) int {
	switch {
	case errors.Is(err, governor.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, governor.ErrNoWaiter):
		return http.StatusNotFound
	}
	return http.StatusServiceUnavailable
}

// authorized reports whether r carries the admin token.
func (p *statusPage) authorized(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return false
	}
	sum := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(sum[:], p.tokenSum[:]) == 1
}

func (p *statusPage) pause(ctx context.Context, req actionRequest, res *actionResult) error {
	if err := noExtras(req, false, false); err != nil {
		return err
	}
	return p.admin.Pause(ctx, req.Resource, res.By)
}

func (p *statusPage) resume(ctx context.Context, req actionRequest, res *actionResult) error {
	if err := noExtras(req, false, false); err != nil {
		return err
	}
	return p.admin.Resume(ctx, req.Resource, res.By)
}

func (p *statusPage) setLimit(ctx context.Context, req actionRequest, res *actionResult) error {
	if err := noExtras(req, true, false); err != nil {
		return err
	}
	if req.Limit == nil {
		return fmt.Errorf("%w: no limit; give \"limit\": 1 to %d, or 0 to return to the configured limit", governor.ErrInvalid, governor.MaxLimit)
	}
	res.Limit = req.Limit
	return p.admin.SetLimit(ctx, req.Resource, *req.Limit, res.By)
}

func (p *statusPage) cancel(ctx context.Context, req actionRequest, res *actionResult) error {
	if err := noExtras(req, false, true); err != nil {
		return err
	}
	if (req.Waiter == "") == (req.Session == "") {
		return fmt.Errorf("%w: give one of \"waiter\" (a waiter's id) and \"session\" (every waiter of that session)", governor.ErrInvalid)
	}
	ws, err := p.admin.Cancel(ctx, req.Resource, governor.CancelSelector{WaiterID: req.Waiter, Session: req.Session}, res.By)
	if err != nil {
		return err
	}
	res.Cancelled = []string{}
	for _, w := range ws {
		res.Cancelled = append(res.Cancelled, w.ID)
	}
	return nil
}

// noExtras refuses the fields of other actions than this one, so that a
// body meant for one action is not half-done by another.
func noExtras(req actionRequest, limit, cancel bool) error {
	switch {
	case !limit && req.Limit != nil:
		return fmt.Errorf("%w: \"limit\" belongs to /api/v1/limit", governor.ErrInvalid)
	case !cancel && (req.Waiter != "" || req.Session != ""):
		return fmt.Errorf("%w: \"waiter\" and \"session\" belong to /api/v1/cancel", governor.ErrInvalid)
	}
	return nil
}
