package bridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Protocol is the protocol number this bridge speaks.
const Protocol = 1

// maxLine bounds one request line: a longer one is refused, not buffered.
const maxLine = 1 << 20

// request is one line from the client.
type request struct {
	ID   int64           `json:"id"`
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args"`
	// NoReply: a release not waited for (noreply.go).
	NoReply bool `json:"noreply"`
	// acquire are the args of an acquire, decoded by dispatch.
	acquire *AcquireArgs
}

// reply is the one answer to a request.
type reply struct {
	ID     int64     `json:"id"`
	OK     bool      `json:"ok"`
	Result any       `json:"result,omitempty"`
	Error  *errorMsg `json:"error,omitempty"`
}

// out writes replies and events, one JSON object per line, from any
// goroutine.
type out struct {
	mu  sync.Mutex
	w   *bufio.Writer
	enc *json.Encoder // on w: its buffers are reused from message to message
	err error
}

func newOut(w io.Writer) *out {
	bw := bufio.NewWriterSize(w, 16<<10)
	return &out{w: bw, enc: json.NewEncoder(bw)}
}

// send writes each of vs as one line and flushes them together (one
// write, unless they are longer than the buffer). After the first write
// error (the client has gone) it writes nothing more and returns that
// error.
func (o *out) send(vs ...any) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	for _, v := range vs {
		if err := o.enc.Encode(v); err != nil {
			// v is not plain data (cannot happen: nothing was written),
			// or the client has gone (then this fails too).
			if err := o.enc.Encode(reply{OK: false, Error: &errorMsg{Code: 125, Kind: kindFailure, Message: "bridge: " + err.Error()}}); err != nil {
				o.err = err
				return err
			}
		}
	}
	o.err = o.w.Flush()
	return o.err
}

// readLine returns the next line of r without its newline. A line longer
// than maxLine is consumed and reported as errLineTooLong; io.EOF ends
// the input (a last line without a newline is still returned first).
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > maxLine+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && (len(line) == 0 || tooLong):
			return nil, err
		}
		if tooLong {
			return nil, errLineTooLong
		}
		return bytes.TrimRight(line, "\r\n"), nil
	}
}

var errLineTooLong = fmt.Errorf("request line longer than %d bytes", maxLine)

// decodeArgs reads args into v, refusing unknown fields so that a typo
// never silently means a default. Absent args leave v as it is.
func decodeArgs(args json.RawMessage, v any) error {
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(args))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return badRequest("args: %v", err)
	}
	return nil
}
