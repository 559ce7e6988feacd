package redistest

import "testing"

// A port is handed out once per process: a server started on a port an
// earlier test's server used would be read as that server after a loss
// by a governor that witnessed the earlier one (the cause of
// TestNextRunEndsOrphanedTree's quarantined first run). Linux, left to
// pick, repeated a port within the first 100.
func TestFreePortNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 3000 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("FreePort returned port %d twice (after %d ports)", p, len(seen))
		}
		seen[p] = true
	}
}
