package proc

import (
	"os"
	"testing"
)

// BenchmarkList: one look at every process on the machine, the unit of
// what a supervised tree costs to follow.
func BenchmarkList(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := List(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChildren: this process's children, what a tree's last sweep
// reads once its cgroup is empty.
func BenchmarkChildren(b *testing.B) {
	for i := 0; i < b.N; i++ {
		Children(os.Getpid())
	}
}
