package scripts

import _ "embed"

// Scripts that stand alone: they do not take the resource KEYS of lib.lua.
var (
	// Rate is the rate limiter (GCRA over requests and tokens).
	//
	//go:embed rate.lua
	Rate string
	// Seq gives out the numbers of a fenced sequence.
	//
	//go:embed seq.lua
	Seq string
	// Observe adds to a backend-kept histogram.
	//
	//go:embed observe.lua
	Observe string
)
