// Package view holds the CLI's words for the project's state: the tables
// and the --json schemas of 'governor slots' and 'governor events', which
// the status page's API of 'governor serve' serves byte for byte. It reads
// governor's Status and Event values and decides nothing about them.
package view
