"""Redis lost its data (FLUSHALL, a restart without persistence) while a
client process held a slot and a budget reservation: a new client
process of the same machine, with a bridge of its own that never saw the
resource or the budget, is refused the slot (the resource quarantined)
and the spend (the budget held), as docs/redis.md and docs/budgets.md
say. The evidence is the machine's witness under the state directory
(GOVERNOR_DIR), which the holder's bridge wrote and the newcomer's reads.
"""

from __future__ import annotations

import json
import os
import sys
import shutil
import tempfile
import subprocess
import unittest
from typing import Any, Dict

from tests import support

import governor

BUDGET = {"name": "evals-day", "limit": 1, "unit": "USD", "per": "24h"}


class LossTests(unittest.TestCase):

    def setUp(self) -> None:
        support.binary()
        self.redis = support.RedisServer()
        self.addCleanup(self.redis.stop)
        self.tmp = tempfile.mkdtemp(prefix="govpy-loss-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.state = os.path.join(self.tmp, "state")  # the machine's state dir: its witness
        self.project = "loss%d" % os.getpid()
        # The holder renews far later than the test runs: only the witness
        # can tell the newcomer that the data was lost.
        self.config = os.path.join(self.tmp, "exec-defaults.yaml")
        with open(self.config, "w") as f:
            f.write("lease:\n  ttl: 300s\n  heartbeat: 200s\n")
        os.chmod(self.config, 0o600)

    def holder(self) -> "governor.Lease":
        g = governor.Governor(redis_url=self.redis.url, dir=self.state, project=self.project, config=self.config,
                              backend="redis")
        self.addCleanup(g.close)
        lease = g.acquire("heavy", limit=1, budgets=[governor.Budget(**BUDGET)], estimate=0.6)
        self.assertEqual([(b["name"], b["reserved"]) for b in lease.budgets], [("evals-day", 0.6)])
        return lease

    def newcomer(self, resource: str, estimate: str = "0") -> Dict[str, Any]:
        """One acquire from a new client process (tests/worker.py try)."""
        env = dict(os.environ, PYTHONPATH=support.ROOT, GOVERNOR_BIN=support.binary(), GOVERNOR_BACKEND="redis",
                   GOVERNOR_REDIS_URL=self.redis.url, GOVERNOR_DIR=self.state, GOVERNOR_PROJECT=self.project,
                   WORKER_BUDGET=json.dumps(BUDGET))
        for k in ("GOVERNOR_HELD", "GOVERNOR_TOKEN", "HEAVY_LOCK_HELD", "GOVERNOR_CONFIG"):
            env.pop(k, None)
        p = subprocess.run([sys.executable, os.path.join(support.HERE, "worker.py"), "try", resource, "-", estimate],
                           env=env, capture_output=True, text=True, timeout=support.DEADLINE)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def check_refused_after(self, lose: "Any") -> None:
        lease = self.holder()
        self.assertTrue(any(n.startswith("redis-witness-") for n in os.listdir(self.state)), os.listdir(self.state))
        lose()
        slot = self.newcomer("heavy")
        self.assertFalse(slot["granted"], "a new process was granted the slot beside the holder of the lost state: %s" % slot)
        self.assertEqual((slot["kind"], slot["code"]), ("busy", 73), slot)
        self.assertIn("quarantined", slot["message"])
        spend = self.newcomer("other", "0.3")
        self.assertFalse(spend["granted"], "the wiped budget handed out again: %s" % spend)
        self.assertEqual((spend["kind"], spend["budget"]["name"], spend["budget"]["reason"]), ("busy", "evals-day", "held"),
                         spend)
        self.assertIn("lost data", spend["message"])
        self.assertFalse(lease.lost.is_set(), "the holder learnt of the loss itself: the test would not need the witness")
        # The holder's own settle counts on the held budget; it stays held.
        lease.settle(0.5)
        spend = self.newcomer("other", "0.3")
        self.assertEqual((spend["granted"], spend["budget"]["reason"], spend["budget"]["spent"]), (False, "held", 0.5), spend)

    def test_flushall(self) -> None:
        self.check_refused_after(lambda: self.assertEqual(self.redis.command("FLUSHALL"), b"+OK"))

    def test_restart_without_persistence(self) -> None:
        self.check_refused_after(self.redis.restart)


if __name__ == "__main__":
    unittest.main()
