package proc

import (
	"encoding/binary"
	"errors"
)

var errBadProcargs = errors.New("proc: unparsable kern.procargs2")

// procargsEnv returns the environment part of a kern.procargs2 record.
// Apple appends its own strings (executable_path=..., ptr_munge=...)
// after the environment; they look like variables and are kept.
func procargsEnv(b []byte) ([]byte, error) {
	if len(b) < 4 {
		return nil, errBadProcargs
	}
	argc := int(binary.NativeEndian.Uint32(b))
	b = b[4:]
	i := 0
	for i < len(b) && b[i] != 0 { // the executable path
		i++
	}
	for i < len(b) && b[i] == 0 { // its padding
		i++
	}
	for n := 0; n < argc; n++ {
		for i < len(b) && b[i] != 0 {
			i++
		}
		if i == len(b) {
			return nil, errBadProcargs
		}
		i++
	}
	return b[i:], nil
}
