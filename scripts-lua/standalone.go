package scripts

import _ "embed"

// Rate is the rate limiter script (GCRA over requests and tokens). It
// stands alone: it does not take the resource KEYS of lib.lua.
//
//go:embed rate.lua
var Rate string
