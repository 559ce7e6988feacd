package runner

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"sync"
)

func newID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("runner: crypto/rand failed: " + err.Error()) // never happens on Linux
	}
	return hex.EncodeToString(b[:])
}

// lockedWriter serialises writes to a writer that is not a file.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// sameWriter reports whether a and b are the same writer; writers of
// uncomparable dynamic types never are.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}
