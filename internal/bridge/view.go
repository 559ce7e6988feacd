package bridge

import (
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/view"
)

// holders are st's holders as `governor slots --json` prints them.
func holders(st governor.Status) []view.Holder {
	return view.SlotsOf("", []governor.Status{st}, nil).Resources[0].Holders
}
