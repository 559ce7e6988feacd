package scripts

import (
	_ "embed"
	"strings"
	"sync"
)

// Scripts that stand alone: they do not take the resource KEYS of lib.lua.
var (
	// Rate is the rate limiter (GCRA over requests and tokens) and its
	// rate shares, built at its first call, not at package init.
	Rate = sync.OnceValue(func() string { return withFairShare(rate) })
	//go:embed rate.lua
	rate string
	//go:embed fairshare.lua
	fairShare string
	// Seq gives out the numbers of a fenced sequence.
	//
	//go:embed seq.lua
	Seq string
	// Observe adds to a backend-kept histogram.
	//
	//go:embed observe.lua
	Observe string
)

// fairMarker is the line of a script where fairshare.lua goes: the one
// fair_share (capacity.FairShare) of capacity.lua and rate.lua.
const fairMarker = "--[[fair_share]]\n"

// withFairShare is src with fairshare.lua in place of its marker; it
// panics if src has none (at the script's first build: every use of it
// fails, its tests first).
func withFairShare(src string) string {
	if strings.Count(src, fairMarker) != 1 {
		panic("scripts: a script without one " + fairMarker)
	}
	return strings.Replace(src, fairMarker, fairShare, 1)
}
