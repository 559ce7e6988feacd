package filebackend

// Crash ends b as a SIGKILL of its process would, for the conformance
// suite (Harness.Crash): the lease files it holds are closed without
// marking their records unproven (Close's detach), so their locks go as
// the kernel drops a dead process's. Its waiters stop as Close stops them.
func Crash(b *Backend) {
	for _, f := range b.shut() {
		f.Close()
	}
}
