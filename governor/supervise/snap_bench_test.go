//go:build linux

package supervise

import "testing"

// BenchmarkSnapshot: one scan of every process on the machine, the unit
// of what a tree costs to follow.
func BenchmarkSnapshot(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := snapshot(); err != nil {
			b.Fatal(err)
		}
	}
}
