package bridge_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/governor-dev/governor/internal/bridge"
)

// sendAll writes the requests in one write (they reach the bridge
// together, buffered at once); a request with "noreply" true is not
// waited for. It returns their ids.
func (c *client) sendAll(reqs ...map[string]any) []int {
	c.t.Helper()
	var buf []byte
	var ids []int
	for _, r := range reqs {
		c.nextID++
		r["id"] = c.nextID
		ids = append(ids, c.nextID)
		b, _ := json.Marshal(r)
		buf = append(append(buf, b...), '\n')
	}
	if _, err := c.in.Write(buf); err != nil {
		c.t.Fatalf("write: %v", err)
	}
	return ids
}

// blockedRelease is a Held whose first release tells it started, then
// waits to be let go.
type blockedRelease struct {
	bridge.Held
	once           *sync.Once
	started, letGo chan struct{}
}

func (b blockedRelease) Release(ctx context.Context) error {
	b.once.Do(func() {
		close(b.started)
		<-b.letGo
	})
	return b.Held.Release(ctx)
}

// TestNoReplyReleaseKeepsTheOrder: a release not waited for, then an
// acquire of the slot it frees, sent together: the acquire runs after
// the release (it would find the slot busy otherwise), and the release
// gets no reply.
func TestNoReplyReleaseKeepsTheOrder(t *testing.T) {
	once, started, letGo := &sync.Once{}, make(chan struct{}), make(chan struct{})
	inR, inW := io.Pipe()
	c := startWrapped(t, fileStore(t), emptyCatalog(t), inR, inW, func(h bridge.Held) bridge.Held {
		return blockedRelease{Held: h, once: once, started: started, letGo: letGo}
	})
	c.hello()
	c.call("acquire", map[string]any{"resources": []string{"solo"}, "limit": 1})
	ids := c.sendAll(
		map[string]any{"op": "release", "args": map[string]any{"lease": "L1"}, "noreply": true},
		map[string]any{"op": "acquire", "args": map[string]any{"resources": []string{"solo"}, "limit": 1}},
	)
	<-started // the release is under way, held back here
	close(letGo)
	r := c.reply(ids[1])
	if r["ok"] != true {
		t.Fatalf("acquire after a release not waited for: %v", r["error"])
	}
	c.call("slots", nil) // everything before it answered
	for _, m := range c.early {
		if v, ok := m["id"].(float64); ok && int(v) == ids[0] {
			t.Fatalf("the release not waited for was answered: %v", m)
		}
	}
}

// TestNoReplyFailureRefusesTheNextRequest: a release not waited for
// that fails is owed to the next request waited for, which is refused
// with it (naming the lease) and not run; the one after runs.
func TestNoReplyFailureRefusesTheNextRequest(t *testing.T) {
	c := start(t, fileStore(t))
	c.hello()
	c.call("acquire", map[string]any{"resources": []string{"r"}, "limit": 1})
	c.sendAll(map[string]any{"op": "release", "args": map[string]any{"lease": "L9"}, "noreply": true})
	e := c.fail("acquire", map[string]any{"resources": []string{"other"}, "limit": 1})
	msg := e["message"].(string)
	if e["kind"] != "failure" || !strings.Contains(msg, "release of lease L9") || !strings.Contains(msg, "unknown lease") ||
		!strings.Contains(msg, "(acquire) was not run") {
		t.Fatalf("the request after a failed release not waited for: %v", e)
	}
	got := c.call("slots", nil)
	for _, r := range got["resources"].([]any) {
		if r.(map[string]any)["resource"] == "other" {
			t.Fatalf("the refused acquire ran: %v", got)
		}
	}
	// A release not waited for that succeeds owes nothing.
	c.sendAll(map[string]any{"op": "release", "args": map[string]any{"lease": "L1"}, "noreply": true})
	c.call("slots", nil)
}

// TestByeReportsWhatIsOwed: bye's reply carries the failures of
// releases not waited for that no request took, once they ended.
func TestByeReportsWhatIsOwed(t *testing.T) {
	c := start(t, fileStore(t))
	res := c.call("hello", map[string]any{"protocol": 1, "client": "go-test", "pid": os.Getpid()})
	if f, _ := res["features"].([]any); !slices.Contains(f, any("noreply")) {
		t.Fatalf("hello's features: %v", res)
	}
	c.sendAll(map[string]any{"op": "provider_release", "args": map[string]any{"lease": "L7"}, "noreply": true},
		map[string]any{"op": "slots", "args": map[string]any{}, "noreply": true})
	e := c.fail("bye", nil)
	msg := e["message"].(string)
	if !strings.Contains(msg, "provider_release of lease L7 (request 2, not waited for) failed") ||
		!strings.Contains(msg, "slots with noreply; allowed: noreply on release") || strings.Contains(msg, "was not run") {
		t.Fatalf("bye after failed releases not waited for: %v", e)
	}
}

// TestNoReplyReportRefusedStillReleases: a provider_report with release
// not waited for, refused before its release (bad input), still releases
// the lease: the client sends nothing after it.
func TestNoReplyReportRefusedStillReleases(t *testing.T) {
	c := start(t, fileStore(t))
	c.hello()
	c.call("acquire", map[string]any{"resources": []string{"solo"}, "limit": 1})
	c.sendAll(map[string]any{"op": "provider_report", "args": map[string]any{"lease": "L1", "release": true, "outcome": "bogus"}, "noreply": true})
	e := c.fail("slots", nil)
	if !strings.Contains(e["message"].(string), `outcome "bogus"`) {
		t.Fatalf("the request after a refused report: %v", e)
	}
	c.call("acquire", map[string]any{"resources": []string{"solo"}, "limit": 1})
}
