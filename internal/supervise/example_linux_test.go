//go:build linux

package supervise_test

import (
	"errors"
	"fmt"

	"github.com/governor-dev/governor/internal/supervise"
)

func ExampleStart() {
	tr, err := supervise.Start(supervise.Options{
		Args: []string{"sh", "-c", "echo hello from $0; exit 3", "child"},
	})
	if errors.Is(err, supervise.ErrNotFound) {
		fmt.Println("exit 127")
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := tr.Wait()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("exit", supervise.ExitCode(e))
	// Output:
	// hello from child
	// exit 3
}
