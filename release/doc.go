// Package release holds the release command (release.sh) and its tests:
// the one version (VERSION at the module's root) and the one licence
// (Apache-2.0) agree across the binary, the Python and npm packages and,
// after a release build, across every artifact it wrote.
package release
