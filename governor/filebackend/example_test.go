package filebackend_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
)

// A machine-wide "heavy" slot with no server: the second acquire is
// refused while the first holds it, and the counters, kept in the state
// dir, cover every process.
func Example() {
	dir, err := os.MkdirTemp("", "governor-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	b, err := filebackend.New(dir, filebackend.Options{}) // "" would mean DefaultDir()
	if err != nil {
		panic(err)
	}
	g, err := governor.New(b, governor.Options{Project: "demo"})
	if err != nil {
		panic(err)
	}
	defer g.Close()

	ctx := context.Background()
	l, err := g.Acquire(ctx, "heavy", governor.AcquireOptions{Limit: 1})
	if err != nil {
		panic(err)
	}
	_, err = g.Acquire(ctx, "heavy", governor.AcquireOptions{Limit: 1})
	fmt.Println("second acquire busy:", errors.Is(err, governor.ErrBusy))
	if err := l.Release(); err != nil {
		panic(err)
	}
	st, err := g.Status(ctx, "heavy")
	if err != nil {
		panic(err)
	}
	fmt.Println("in use:", st.Used, "granted:", st.Counters.Acquired, "refused:", st.Counters.Busy)
	// Output:
	// second acquire busy: true
	// in use: 0 granted: 1 refused: 1
}
