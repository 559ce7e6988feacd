// Package layering holds the test that keeps the package graph layered:
// the library (governor/...) below the configuration (config), below the
// tool (internal/...), below the wiring (cmd/...). It has no code.
package layering
