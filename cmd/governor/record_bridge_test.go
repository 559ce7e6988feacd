package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/governor-dev/governor/internal/acquire"
	"github.com/governor-dev/governor/internal/runner/recordtest"
)

// TestRecordOneBuilder: the record a client writes through the bridge
// (its acquire with "record": true) says of each resource what `governor
// run --record` says of the same acquire, field by field: one builder
// (acquire.RecordOf), whatever the way in. The lease and token are each
// acquire's own.
func TestRecordOneBuilder(t *testing.T) {
	g := fileGlobal(t, "project: rec\nresources:\n  gpu: {limit: 2}\n")
	for _, args := range [][]string{
		{"--resource", "solo", "--limit", "1"},
		{"--resource", "gpu:2"},
		{"--resource", "gpu", "--resource", "solo", "--limit", "3"},
	} {
		path := filepath.Join(t.TempDir(), "rec.jsonl")
		if code, _, errs := cli(t, append(append(append(g, "run", "--record", path), args...), "--", "true")...); code != 0 {
			t.Fatalf("run %q: exit %d: %s", args, code, errs)
		}
		recs := recordtest.All(t, path)
		if len(recs) != 2 {
			t.Fatalf("run %q: %d records; want grant and end", args, len(recs))
		}
		acq := map[string]any{"record": true}
		for i := 0; i+1 < len(args); i += 2 {
			switch args[i] {
			case "--resource":
				rs, _ := acq["resources"].([]string)
				acq["resources"] = append(rs, args[i+1])
			case "--limit":
				var n int
				fmt.Sscan(args[i+1], &n)
				acq["limit"] = n
			}
		}
		got := bridgeRecord(t, g, acq)
		for _, cli := range recs {
			if got.Nested != cli.Nested || len(got.Resources) != len(cli.Resources) {
				t.Fatalf("%q: bridge record %+v; %s record nested %v, %+v", args, got, cli.Kind, cli.Nested, cli.Resources)
			}
			for i, b := range got.Resources {
				c := cli.Resources[i]
				if b.Lease == "" || c.Lease == "" || b.Token == 0 || c.Token == 0 {
					t.Errorf("%q: resource %d: bridge %+v, %s record %+v; want both with their lease and token", args, i, b, cli.Kind, c)
				}
				b.Lease, b.Token, c.Lease, c.Token = "", 0, "", 0
				if b != c {
					t.Errorf("%q: resource %d: bridge record %+v; %s record %+v", args, i, b, cli.Kind, c)
				}
			}
		}
	}
}

// bridgeRecord acquires acq through `governor bridge` with the global
// flags g and returns the record of its result.
func bridgeRecord(t *testing.T, g []string, acq map[string]any) (rec struct {
	Resources []acquire.RecordResource `json:"resources"`
	Nested    bool                     `json:"nested"`
}) {
	t.Helper()
	b := startBridge(t, g)
	var res struct {
		Record *json.RawMessage `json:"record"`
	}
	if err := json.Unmarshal(b.call("acquire", acq), &res); err != nil || res.Record == nil {
		t.Fatalf("acquire %v: %v, no record in its result", acq, err)
	}
	if err := json.Unmarshal(*res.Record, &rec); err != nil {
		t.Fatal(err)
	}
	b.close()
	return rec
}
