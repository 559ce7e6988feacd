package bridge_test

import (
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
)

// TestRedactShowsTheSharedFixture: the redact op shows every command line
// of the shared fixture as governor run --record does (internal/redact's
// own test reads the same file), and refuses a request without args.
func TestRedactShowsTheSharedFixture(t *testing.T) {
	data, err := os.ReadFile("../../governor/testdata/redaction.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Cases []struct {
			Args  []string `json:"args"`
			Shown string   `json:"shown"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	a := startWith(t, fileStore(t), catalogOf(t, ""), inR, inW)
	a.hello()
	for _, c := range fx.Cases {
		r := a.call("redact", map[string]any{"args": c.Args})
		if r["command"] != c.Shown {
			t.Errorf("redact %q = %v, want %q", c.Args, r["command"], c.Shown)
		}
	}
	for _, args := range []map[string]any{{}, {"argv": []string{"x"}}} {
		e := a.fail("redact", args)
		if e["code"] != float64(125) || !strings.Contains(e["message"].(string), "args") {
			t.Errorf("redact %v: %v; want 125 naming args", args, e)
		}
	}
}
