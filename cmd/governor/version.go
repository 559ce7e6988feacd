package main

import "github.com/governor-dev/governor/internal/buildinfo"

// version describes the running binary: the release version (VERSION),
// the commit it was built from and the Go release (internal/buildinfo).
func version() string { return buildinfo.Read().String() }
