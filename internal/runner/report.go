package runner

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/governor-dev/governor/internal/acquire"
	"github.com/governor-dev/governor/internal/words"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/exitcode"

	"github.com/governor-dev/governor/internal/safetext"
)

// storeArgs is flags as shell words.
func storeArgs(flags []config.StoreFlag) string {
	var b strings.Builder
	for _, f := range flags {
		if f.Env != "" {
			fmt.Fprintf(&b, " --%s \"$%s\"", f.Name, f.Env)
		} else {
			fmt.Fprintf(&b, " --%s %s", f.Name, words.ShellQuote(f.Value))
		}
	}
	return b.String()
}

// OutcomeOf is the record outcome of a run that ends with code before
// its command ran.
func OutcomeOf(code int) Outcome {
	switch code {
	case exitcode.Busy:
		return OutcomeBusy
	case exitcode.Skipped:
		return OutcomeSkipped
	case exitcode.Superseded:
		return OutcomeSuperseded
	}
	return OutcomeError
}

// WriteReport writes the message of a command that ends with code and
// err, as governor prints it on stderr: "governor: " and one line, and
// for a refusal or a wait that timed out (not a skip) the holders and the
// 'governor takeover' command of each. A nil err writes nothing.
func WriteReport(w io.Writer, err error) {
	if err == nil {
		return
	}
	fmt.Fprintf(w, "governor: %s\n", strings.TrimPrefix(err.Error(), "governor: "))
	var na *acquire.NotAcquiredError
	if errors.As(err, &na) && !na.Skipped && na.Busy != nil {
		writeHolders(w, na.Busy.Resource, na.Busy.Status, na.Store)
	}
}

// WriteRefusal tells who holds resource and how to take it over: the
// message of every refusal (run, acquire, takeover).
func WriteRefusal(w io.Writer, resource string, st governor.Status) {
	WriteReport(w, acquire.Refused(&governor.BusyError{Resource: resource, Status: st}, false))
}

// writeHolders lists each holder of resource and the command that takes
// its lease over, on the store that store selects.
func writeHolders(w io.Writer, resource string, st governor.Status, store []config.StoreFlag) {
	for _, h := range st.Holders {
		fmt.Fprintf(w, "  held by %s\n", h.Describe(st.Now))
		if h.Command != "" {
			fmt.Fprintf(w, "    running: %s\n", safetext.Escape(h.Command))
		}
	}
	flag := ""
	if p := st.Key.Project; p != "" && p != governor.DefaultName {
		flag = " --project " + words.ShellQuote(p)
	}
	flag += storeArgs(store)
	for _, h := range st.Holders {
		fmt.Fprintf(w, "  if that holder is gone, take it over: governor takeover %s --lease %s%s\n", words.ShellQuote(resource), safetext.Escape(words.ShellQuote(h.LeaseID)), flag)
	}
}
