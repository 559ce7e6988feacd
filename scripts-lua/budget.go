package scripts

import _ "embed"

// Budget keeps a project's spend budgets: reserve, settle, admin, read
// (budget.lua). It stands alone, on the keys of the project's budgets.
//
//go:embed budget.lua
var Budget string
