//go:build linux || darwin

package supervise

import (
	"fmt"
	"io"
	"os"
)

// stdio returns the descriptors for the child (0, 1, 2, then ExtraFiles),
// and the pipe ends that the parent must close once the child has started.
// Readers and writers that are not files get a pipe and, later, a copier.
func (t *Tree) stdio(opts Options) (files []uintptr, childEnds []*os.File, err error) {
	var opened []*os.File
	fail := func(err error) ([]uintptr, []*os.File, error) {
		for _, f := range opened {
			f.Close()
		}
		t.stdinW, t.outputs = nil, nil
		return nil, nil, fmt.Errorf("supervise: %w", err)
	}

	in := opts.Stdin
	if in == nil {
		in = os.Stdin
	}
	if f, ok := in.(*os.File); ok {
		files = append(files, f.Fd())
	} else {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		opened = append(opened, r, w)
		childEnds = append(childEnds, r)
		t.stdinW, t.stdin = w, in
		files = append(files, r.Fd())
	}

	for i, out := range []io.Writer{opts.Stdout, opts.Stderr} {
		if out == nil {
			out = []io.Writer{os.Stdout, os.Stderr}[i]
		}
		if f, ok := out.(*os.File); ok {
			files = append(files, f.Fd())
			continue
		}
		if i == 1 && len(t.outputs) == 1 && sameWriter(out, opts.Stdout) {
			// One pipe for both, so that the writer sees a single
			// writer and the two streams keep their relative order.
			files = append(files, files[1])
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		opened = append(opened, r, w)
		childEnds = append(childEnds, w)
		t.outputs = append(t.outputs, output{out, r})
		files = append(files, w.Fd())
	}
	for _, f := range opts.ExtraFiles {
		if f == nil {
			files = append(files, ^uintptr(0)) // closed in the child
		} else {
			files = append(files, f.Fd())
		}
	}
	return files, childEnds, nil
}

// sameWriter reports whether a and b are the same writer. Interface values
// of uncomparable dynamic types are never the same.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// output is a writer fed from the read end of the child's pipe.
type output struct {
	w io.Writer
	r *os.File
}

// closeParentEnds closes the parent's pipe ends when Start fails.
func (t *Tree) closeParentEnds() {
	if t.stdinW != nil {
		t.stdinW.Close()
	}
	for _, o := range t.outputs {
		o.r.Close()
	}
}

// startCopiers connects non-file readers and writers to their pipes.
func (t *Tree) startCopiers() {
	if t.stdinW != nil {
		// Not waited for, as in os/exec: the reader may never end.
		go func() {
			_, _ = io.Copy(t.stdinW, t.stdin)
			t.stdinW.Close()
		}()
	}
	for _, o := range t.outputs {
		t.copiers.Add(1)
		go func() {
			defer t.copiers.Done()
			_, _ = io.Copy(o.w, o.r)
			o.r.Close()
		}()
	}
}
