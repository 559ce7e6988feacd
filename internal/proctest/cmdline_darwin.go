package proctest

import (
	"bytes"
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// cmdline returns the executable path and arguments of pid, NUL-separated,
// from sysctl kern.procargs2 (argc, the path, NUL padding, argc
// arguments, then the environment, which is left out); nil when it cannot
// be read.
func cmdline(pid int) []byte {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil || len(b) < 4 {
		return nil
	}
	argc := int(binary.NativeEndian.Uint32(b))
	b = b[4:]
	end := 0
	for n := -1; n < argc && end < len(b); n++ { // the path, then argc arguments
		i := bytes.IndexByte(b[end:], 0)
		if i < 0 {
			return b
		}
		end += i
		for end < len(b) && b[end] == 0 {
			end++
		}
	}
	return b[:end]
}
