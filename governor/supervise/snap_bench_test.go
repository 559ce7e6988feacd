//go:build linux

package supervise

import "testing"

func BenchmarkSnapshot(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := snapshot(); err != nil {
			b.Fatal(err)
		}
	}
}
