//go:build !linux

package runner

import "io"

func terminal(w io.Writer) (int, bool) { return -1, false }

func columns(fd int) int { return 0 }
