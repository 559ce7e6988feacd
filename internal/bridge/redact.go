package bridge

import (
	"context"

	"github.com/governor-dev/governor/internal/redact"
)

// RedactArgs are a redact request's arguments: a command line.
type RedactArgs struct {
	Args []string `json:"args"`
}

// redactResult is the command line as governor shows it: secrets hidden
// (internal/redact, the one rule), quoted for a POSIX shell.
type redactResult struct {
	Command string `json:"command"`
}

// opRedact lets a client write the command line of a record as `governor
// run --record` does, by the same rule, with no copy of it in the client.
func opRedact(_ context.Context, _ *server, req request) (any, error) {
	var a RedactArgs
	if err := decodeArgs(req.Args, &a); err != nil {
		return nil, err
	}
	if a.Args == nil {
		return nil, badRequest("redact needs args; allowed: {\"args\": [\"WORD\", ...]}")
	}
	return redactResult{Command: redact.Args(a.Args)}, nil
}
