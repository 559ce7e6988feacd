package statuspage

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/leasetest"
)

// GET / serves index.html with the first reading in it: the API's answers
// the page draws before it asks for anything, and no "connecting…". Text
// another process wrote (here a session) cannot end the script element.
func TestIndexHoldsTheFirstReading(t *testing.T) {
	const session = `</script><script>alert(1)</script>`
	g := leasetest.FileGovernor(t, t.TempDir(), governor.Options{Project: "prj", Session: session})
	l, err := g.Acquire(context.Background(), "gpu", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Release() })
	src := NewReopening("prj", func(context.Context) (*governor.Governor, error) { return g, nil })
	mux := http.NewServeMux()
	NewPage(src, PageOptions{Timeout: 5 * time.Second, History: NewHistory(nil)}).Register(mux)
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	resp, err := http.Get(s.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("GET /: %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
	for _, flash := range []string{"connecting", "Reading the backend"} {
		if strings.Contains(page, flash) {
			t.Errorf("the served page says %q before its data", flash)
		}
	}
	if strings.Count(page, "<script") != 2 || strings.Contains(page, "alert(1)</script>") {
		t.Fatalf("the session's text ends the first reading's script element:\n%s", page)
	}
	start := `<script type="application/json" id="first">`
	i := strings.Index(page, start)
	j := strings.Index(page[i+len(start):], "</script>")
	if i < 0 || j < 0 {
		t.Fatalf("no first reading in the page:\n%s", page)
	}
	var first struct {
		Info  struct{ Status int }
		Slots struct {
			Status int
			Body   struct {
				Resources []struct {
					Resource string
					Holders  []struct{ Session string }
				}
			}
		}
		History, Budgets, Events *struct{ Status int }
	}
	if err := json.Unmarshal([]byte(page[i+len(start):i+len(start)+j]), &first); err != nil {
		t.Fatalf("the first reading: %v", err)
	}
	if first.Info.Status != 200 || first.Slots.Status != 200 || first.History == nil || first.Events == nil || first.Events.Status != 200 {
		t.Errorf("first reading's answers: %+v", first)
	}
	rs := first.Slots.Body.Resources
	if len(rs) == 0 || rs[0].Resource != "gpu" || len(rs[0].Holders) != 1 || rs[0].Holders[0].Session != session {
		t.Errorf("first reading's slots: %+v; want gpu held by %q", rs, session)
	}
}
