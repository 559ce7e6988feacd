package statuspage

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// The page's first reading is in the HTML it is served with: the page
// draws it before it asks for anything, so its first paint holds the data
// (no "connecting…" until the first poll answers). Each reading is what
// the API answers on its path, status and body, made by the API's own
// handler: the page draws one as it draws a poll.

// firstMark is where index.html takes the reading: the element's text.
const firstMark = `<script type="application/json" id="first">null</script>`

// reading is one API answer as the page's poll sees it.
type reading struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// firstReading is what the page's poll reads, at once: info, slots and,
// when slots answered, history, budgets and the events of the last 24h.
type firstReading struct {
	Info    reading  `json:"info"`
	Slots   reading  `json:"slots"`
	History *reading `json:"history,omitempty"`
	Budgets *reading `json:"budgets,omitempty"`
	Events  *reading `json:"events,omitempty"`
}

// index serves index.html with the first reading in it.
func (p *Page) index(w http.ResponseWriter, r *http.Request) {
	page, err := pageFiles.ReadFile("page/index.html")
	if err != nil { // cannot happen: the files are embedded
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	f := firstReading{Info: p.read(r, p.info, "/api/v1/info"), Slots: p.read(r, p.slots, "/api/v1/slots")}
	if f.Slots.Status == http.StatusOK {
		for _, x := range []struct {
			to   **reading
			h    http.HandlerFunc
			path string
		}{{&f.History, p.history, "/api/v1/history"}, {&f.Budgets, p.budgets, "/api/v1/budgets"}, {&f.Events, p.events, "/api/v1/events?since=24h"}} {
			got := p.read(r, x.h, x.path)
			*x.to = &got
		}
	}
	// json.Marshal escapes <, > and & (also inside the raw bodies): no
	// text another process wrote can end the script element.
	b, err := json.Marshal(f)
	if err != nil { // cannot happen: the bodies are the API's JSON
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	page = bytes.Replace(page, []byte(firstMark), []byte(`<script type="application/json" id="first">`+string(b)+`</script>`), 1)
	pageHeaders(w, "text/html; charset=utf-8")
	_, _ = w.Write(page)
}

// read is what handler h answers for path, as a reading.
func (p *Page) read(r *http.Request, h http.HandlerFunc, path string) reading {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, path, nil)
	if err != nil { // cannot happen: the paths are constant
		return reading{Status: http.StatusInternalServerError, Body: json.RawMessage(`null`)}
	}
	rec := &recorder{header: http.Header{}}
	h(rec, req)
	body := bytes.TrimSpace(rec.body.Bytes())
	if !json.Valid(body) {
		body = []byte(`null`)
	}
	return reading{Status: rec.code, Body: body}
}

// recorder is a minimal http.ResponseWriter: it keeps what a handler
// writes.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}
