// Package bridge is the server of `governor bridge`: a co-process that a
// client library (clients/python, clients/typescript) starts with
// stdin/stdout pipes and talks to in newline-delimited JSON
// (docs/bridge-protocol.md, protocol 1).
//
// One bridge serves one client process. It opens one Governor whose
// leases are declared as owned by that process (hello's pid), multiplexes
// any number of leases and waits, runs their heartbeats, pushes events
// (queued, granted, lost, withdrawn, cooloff), and takes every slot
// through the one acquire pipeline the CLI uses. When its input ends (the
// client said bye, closed the pipe or died), it releases everything it
// holds and returns.
package bridge
