package governor_test

import (
	"go/ast"
	"sort"
	"strings"
	"testing"
)

// maxContractMethods is the ceiling on the backend contract: the methods
// declared in the exported interfaces of package governor (Backend,
// RateBackend, BudgetBackend and the optional capabilities beside them),
// each counted once where it is declared (an embedded interface adds
// none). It was 39 when issue 41 asked for at most 26: a new capability
// goes into a request struct of an existing call, or is an optional
// interface the Governor detects.
const maxContractMethods = 26

// contractMethods lists "Interface.Method" for every method declared in
// an exported interface of the package's non-test files in dir.
func contractMethods(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, f := range libraryFiles(t, dir) {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !ts.Name.IsExported() {
				return true
			}
			if it, ok := ts.Type.(*ast.InterfaceType); ok {
				for _, m := range it.Methods.List {
					for _, name := range m.Names { // none: an embedded interface
						out = append(out, ts.Name.Name+"."+name.Name)
					}
				}
			}
			return false
		})
	}
	sort.Strings(out)
	return out
}

// TestContractMethods: the backend contract stays at most
// maxContractMethods methods.
func TestContractMethods(t *testing.T) {
	ms := contractMethods(t, ".")
	if len(ms) > maxContractMethods {
		t.Errorf("the exported interfaces of package governor declare %d methods, more than %d: put the new call in a request struct of an existing one, or make it an optional interface\n%s",
			len(ms), maxContractMethods, strings.Join(ms, "\n"))
	}
	t.Logf("%d methods:\n%s", len(ms), strings.Join(ms, "\n"))
}
