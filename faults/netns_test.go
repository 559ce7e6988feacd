package faults_test

import "testing"

// Scenario 6 (several hosts in network namespaces, one partitioned by
// taking its link down) is not part of this suite: processes in network
// namespaces of one machine share its kernel and PID namespace, so they
// share governor's host id and the same-host proof of death rightly
// applies between them; telling hosts apart needs a PID namespace and a
// private /proc per host as well, and root. The cross-host behaviour it
// would check is covered without namespaces: a partitioned holder
// (TestPartitionedHolder) and holders whose death cannot be proven wait
// for their TTL (TestPausedHolder, TestPausedGovernorRun).
func TestSeveralHostsNetns(t *testing.T) {
	t.Skip("scenario 6 (ip netns hosts) not implemented: network namespaces alone share the host id; see the comment")
}
