"""Releases not waited for: the bridge keeps the order, a failure is
raised by the client's next call (which does not run) or by close."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

from tests import support

import governor


class NoReplyTests(support.FileCase):

    def _stopped(self, g: governor.Governor, release: "Any") -> None:
        """Runs release while the bridge is stopped (it answers nothing
        until continued): it must return all the same."""
        pid = g.bridge_pid
        os.kill(pid, signal.SIGSTOP)
        try:
            t = threading.Thread(target=release)
            t.start()
            t.join(support.DEADLINE)
            self.assertFalse(t.is_alive(), "the release waited for the stopped bridge's reply")
        finally:
            os.kill(pid, signal.SIGCONT)

    def test_a_grant_from_the_share_is_released_without_waiting(self) -> None:
        g = self.gov(config=self.config_file("resources:\n  hot: {limit: 4, capacity: true}\n"))
        lease = g.acquire("hot", wait=True)
        self.assertEqual(lease.token, 0)  # from the share
        self._stopped(g, lease.release)
        for _ in range(3):  # each release ran before the next acquire: the share's slot is free again
            g.acquire("hot").release()

    def test_a_release_not_waited_for_frees_the_slot_for_the_next_acquire(self) -> None:
        g = self.gov()
        lease = g.acquire("solo", limit=1)
        self._stopped(g, lambda: lease.release(wait=False))
        # In the pipe's order: the release ran first, so the slot is free
        # for an acquire that does not wait.
        g.acquire("solo", limit=1).release()

    def _released_behind_its_back(self, g: governor.Governor) -> governor.Lease:
        """A lease the bridge no longer knows (released by a request of its
        own): its release fails, as a release the bridge finds lost does."""
        lease = g.acquire("r", limit=1)
        g._bridge().call("release", {"lease": lease.id})
        return lease

    def test_a_failed_release_is_raised_by_the_next_call_which_does_not_run(self) -> None:
        g = self.gov()
        lease = self._released_behind_its_back(g)
        lease.release(wait=False)  # no reply waited for: its failure is owed
        with self.assertRaises(governor.GovernorError) as cm:
            g.acquire("other", limit=1)
        msg = str(cm.exception)
        self.assertIn("release of lease %s" % lease.id, msg)
        self.assertIn("unknown lease", msg)
        self.assertIn("(acquire) was not run", msg)
        self.assertEqual([r.resource for r in g.slots("other") if r.used], [])  # told once: this call runs

    def test_close_raises_what_no_call_took(self) -> None:
        g = governor.Governor(**self.backend.kwargs())
        lease = self._released_behind_its_back(g)
        lease.release(wait=False)
        with self.assertRaises(governor.GovernorError) as cm:
            g.close()
        self.assertIn("release of lease %s" % lease.id, str(cm.exception))
        self.assertNotIn("was not run", str(cm.exception))

    def test_a_lease_of_the_backend_waits_and_raises_at_the_release(self) -> None:
        g = self.gov()
        lease = self._released_behind_its_back(g)  # token > 0: other processes see its release
        with self.assertRaises(governor.GovernorError) as cm:
            lease.release()
        self.assertIn("unknown lease", str(cm.exception))
        g.slots()  # nothing owed
