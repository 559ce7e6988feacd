// Command governor wraps commands in cross-process slots, lists slots,
// and holds leases for shell scripts. It only wires flags to the
// library (package governor) and the configuration (package config).
package main

import (
	"os"
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
