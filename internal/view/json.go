package view

import (
	"bytes"
	"encoding/json"
	"io"
	"time"

	"github.com/governor-dev/governor/governor/safetext"
)

// WriteJSON writes v indented, with the characters a terminal would act
// on escaped (safetext.JSON): the data is unchanged, the display safe.
func WriteJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(safetext.JSON(b.Bytes()))
	return err
}

// WriteJSONLine writes v on one line, escaped as WriteJSON does: one
// reading of --watch --json into a pipe.
func WriteJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(safetext.JSON(b), '\n'))
	return err
}

// Dash shows text another process wrote (sessions, hosts, commands, lease
// ids) in a table: "-" when empty, escaped for the terminal else.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return safetext.Escape(s)
}

// secs is d in seconds with millisecond precision, as the schemas give
// durations.
func secs(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }
