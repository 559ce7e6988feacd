// Package words is where the CLI's words live: the text of reports,
// refusals, notes and ages that governor prints, kept out of the library
// (package governor keeps data) and out of the wiring (cmd/governor).
package words
