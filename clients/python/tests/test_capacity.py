"""Capacity leases through the bridge: a resource the configuration opts
in (capacity: true) is granted from each bridge's share, never more than
its limit at once, with no client change."""

from __future__ import annotations

import os
import threading

from tests import support

import governor


class CapacityTests(support.FileCase):

    def setUp(self) -> None:
        super().setUp()
        self.config = self.path("exec-defaults.yaml")
        with open(self.config, "w") as f:
            f.write("resources:\n  hot: {limit: 4, capacity: true, capacity_refresh: 1s}\n")
        os.chmod(self.config, 0o600)

    def test_slots_come_from_the_shares(self) -> None:
        govs = [self.gov(config=self.config), self.gov(config=self.config)]
        mu = threading.Lock()
        state = {"in_use": 0, "most": 0, "grants": 0}
        tokens, ids, errors = set(), set(), []

        def work(g) -> None:
            try:
                for _ in range(20):
                    with g.slot("hot", wait=True) as lease:
                        with mu:
                            state["in_use"] += 1
                            state["most"] = max(state["most"], state["in_use"])
                            state["grants"] += 1
                            tokens.add(lease.token)
                            ids.add(lease.resources[0]["lease_id"])
                        with mu:
                            state["in_use"] -= 1
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(g,)) for g in govs for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(support.DEADLINE)
        self.assertEqual(errors, [])
        self.assertEqual(state["grants"], 120)
        self.assertLessEqual(state["most"], 4)
        # From the shares: no fencing token, and one capacity lease per
        # bridge names every grant; the slots view holds only the shares.
        self.assertEqual(tokens, {0})
        self.assertLessEqual(len(ids), 2)
        r = govs[0].slots("hot")[0]
        self.assertLessEqual(r.used, 4)
        self.assertLessEqual({h.lease_id for h in r.holders}, ids)

    def test_a_share_has_no_fencing_token(self) -> None:
        g = self.gov(config=self.config)
        with g.slot("hot", wait=True) as lease:
            with self.assertRaises(governor.GovernorError) as cm:
                lease.seq_next("version")
            self.assertIn("granted from a capacity share (capacity: true), which has no fencing token", str(cm.exception))
