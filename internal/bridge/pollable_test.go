package bridge_test

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// A bridge whose stdin is a blocking pipe (as a client starts it) serves
// over it, and leaves it in blocking mode once it ends: the pipe's mode
// is shared with whoever else holds it.
func TestServeOnABlockingPipe(t *testing.T) {
	var fds [2]int
	if err := unix.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "client")
	defer r.Close()
	c := startOn(t, fileStore(t), r, w)
	c.hello()
	got := c.call("acquire", map[string]any{"resources": []string{"x"}, "limit": 1})
	c.call("release", map[string]any{"lease": got["lease"]})
	c.close()
	flags, err := unix.FcntlInt(uintptr(fds[0]), unix.F_GETFL, 0)
	if err != nil || flags&unix.O_NONBLOCK != 0 {
		t.Fatalf("the pipe after the bridge ended: flags %#x, %v; want blocking", flags, err)
	}
}
