package runner

import "github.com/governor-dev/governor/internal/exitcode"

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
