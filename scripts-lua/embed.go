// Package scripts holds governor's Redis scripts. Each operation's script
// is the shared prelude lib.lua followed by the operation's own file, so
// the state layout and its invariants are written once.
package scripts

import (
	_ "embed"
)

var (
	//go:embed lib.lua
	lib string
	//go:embed acquire.lua
	acquire string
	//go:embed renew.lua
	renew string
	//go:embed release.lua
	release string
	//go:embed cancel.lua
	cancel string
	//go:embed reclaim.lua
	reclaim string
	//go:embed lost.lua
	lost string
	//go:embed status.lua
	status string
	//go:embed takeover.lua
	takeover string
)

// The scripts, ready for redis.NewScript. All take the same six KEYS
// (see lib.lua).
var (
	Acquire  = lib + acquire
	Renew    = lib + renew
	Release  = lib + release
	Cancel   = lib + cancel
	Reclaim  = lib + reclaim
	Lost     = lib + lost
	Status   = lib + status
	Takeover = lib + takeover
)
