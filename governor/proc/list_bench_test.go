package proc

import "testing"

// BenchmarkList: one look at every process on the machine, the unit of
// what a supervised tree costs to follow.
func BenchmarkList(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := List(); err != nil {
			b.Fatal(err)
		}
	}
}
