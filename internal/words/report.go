package words

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/safetext"
)

// Refusal is an error of not getting slots whose report lists the
// holders (acquire.NotAcquiredError): busy is nil when there are none to
// list (a skip, a spent rate budget); store are the global flags of the
// store it came from, for the takeover hint.
type Refusal interface {
	error
	Holders() (busy *governor.BusyError, store []config.StoreFlag)
}

// WriteReport writes the message of a command that ends with code and
// err, as governor prints it on stderr: "governor: " and one line, and
// for a refusal or a wait that timed out (not a skip) the holders and the
// 'governor takeover' command of each. A nil err writes nothing.
func WriteReport(w io.Writer, err error) {
	if err == nil {
		return
	}
	fmt.Fprintf(w, "governor: %s\n", Message(err))
	var r Refusal
	if errors.As(err, &r) {
		if busy, store := r.Holders(); busy != nil {
			writeHolders(w, busy.Resource, busy.Status, store)
		}
	}
}

// Message is err's message without the library's "governor: " prefixes,
// at its start and where a wrapped error repeats it ("cannot reach Redis
// at …: governor: redis: subscribe: …"): the CLI says "governor: " once.
func Message(err error) string {
	return strings.ReplaceAll(strings.TrimPrefix(err.Error(), "governor: "), ": governor: ", ": ")
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
		flag = " --project " + ShellQuote(p)
	}
	flag += storeArgs(store)
	for _, h := range st.Holders {
		fmt.Fprintf(w, "  if that holder is gone, take it over: governor takeover %s --lease %s%s\n", ShellQuote(resource), safetext.Escape(ShellQuote(h.LeaseID)), flag)
	}
}

// storeArgs is flags as shell words.
func storeArgs(flags []config.StoreFlag) string {
	var b strings.Builder
	for _, f := range flags {
		if f.Env != "" {
			fmt.Fprintf(&b, " --%s \"$%s\"", f.Name, f.Env)
		} else {
			fmt.Fprintf(&b, " --%s %s", f.Name, ShellQuote(f.Value))
		}
	}
	return b.String()
}
