//go:build !linux

// Command soak is Linux-only: it reads /proc for processes, CPU time and
// RSS, and mounts a tmpfs for the full-disk fault.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "soak: Linux only (it reads /proc and mounts a tmpfs)")
	os.Exit(2)
}
