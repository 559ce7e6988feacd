package statuspage

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/governor-dev/governor/governor"
)

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
func (p *Page) action(do func(ctx context.Context, req actionRequest, res *actionResult) error) http.HandlerFunc {
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
func (p *Page) authorized(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return false
	}
	sum := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(sum[:], p.tokenSum[:]) == 1
}

func (p *Page) pause(ctx context.Context, req actionRequest, res *actionResult) error {
	if err := noExtras(req, false, false); err != nil {
		return err
	}
	return p.admin.Pause(ctx, req.Resource, res.By)
}

func (p *Page) resume(ctx context.Context, req actionRequest, res *actionResult) error {
	if err := noExtras(req, false, false); err != nil {
		return err
	}
	return p.admin.Resume(ctx, req.Resource, res.By)
}

func (p *Page) setLimit(ctx context.Context, req actionRequest, res *actionResult) error {
	if err := noExtras(req, true, false); err != nil {
		return err
	}
	if req.Limit == nil {
		return fmt.Errorf("%w: no limit; give \"limit\": 1 to %d, or 0 to return to the configured limit", governor.ErrInvalid, governor.MaxLimit)
	}
	res.Limit = req.Limit
	return p.admin.SetLimit(ctx, req.Resource, *req.Limit, res.By)
}

func (p *Page) cancel(ctx context.Context, req actionRequest, res *actionResult) error {
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
