"""The mkdir heavy slot (resources.heavy.mkdir_lock) and the with-heavy-lock
wrapper's own mkdir protocol exclude each other, from Python."""

from __future__ import annotations

import os
import subprocess
import sys
import unittest

from tests import support
from tests.support import assert_no_overlap

import governor

# The wrapper's protocol (scripts/with-heavy-lock): mkdir DIR/slot.d, its pid
# in slot.d/pid, work, rm -r slot.d; busy while slot.d exists.
WRAPPER = r"""
import os, sys, time
d, work, hold = sys.argv[1], sys.argv[2], float(sys.argv[3])
slot = os.path.join(d, "slot.d")
while True:
    try:
        os.mkdir(slot)
        break
    except FileExistsError:
        time.sleep(0.01)
with open(os.path.join(slot, "pid"), "w") as f:
    f.write("%d\n" % os.getpid())
with open(work, "a") as f:
    f.write("S wrapper\n")
print("held", flush=True)
time.sleep(hold)
with open(work, "a") as f:
    f.write("E wrapper\n")
os.remove(os.path.join(slot, "pid"))
os.rmdir(slot)
"""


class HeavySlotTests(support.FileCase):

    def setUp(self) -> None:
        super().setUp()
        self.lockdir = self.path("heavy-lock")
        os.mkdir(self.lockdir, 0o700)  # the wrapper's DIR: it makes only slot.d
        self.config = self.path("exec-defaults.yaml")
        with open(self.config, "w") as f:
            f.write("resources:\n  heavy: {limit: 1, mkdir_lock: %s}\n" % self.lockdir)
        os.chmod(self.config, 0o600)

    def wrapper(self, work: str, hold: float) -> subprocess.Popen:
        p = subprocess.Popen([sys.executable, "-c", WRAPPER, self.lockdir, work, str(hold)], stdout=subprocess.PIPE,
                             text=True)
        self.procs.append(p)
        return p

    def test_wrapper_then_client(self) -> None:
        work = self.path("work")
        w = self.wrapper(work, 0.3)
        self.assertEqual(w.stdout.readline().strip(), "held")
        g = self.gov(config=self.config)
        with g.slot("heavy", wait=True) as lease:
            with open(work, "a") as f:
                f.write("S client\nE client\n")
            self.assertTrue(lease.env.get("HEAVY_LOCK_HELD"), lease.env)
        self.assertEqual(w.wait(support.DEADLINE), 0)
        lines = assert_no_overlap(self, work)
        self.assertEqual([l[1] for l in lines], ["wrapper", "wrapper", "client", "client"])

    def test_client_then_wrapper(self) -> None:
        work = self.path("work")
        g = self.gov(config=self.config)
        with g.slot("heavy", wait=True):
            with open(os.path.join(self.lockdir, "slot.d", "pid")) as f:
                self.assertEqual(int(f.read()), g.bridge_pid, "the live bridge holds the mkdir slot")
            w = self.wrapper(work, 0)
            with open(work, "a") as f:
                f.write("S client\n")
            self.assertIsNone(w.poll())
            with open(work, "a") as f:
                f.write("E client\n")
        self.assertEqual(w.stdout.readline().strip(), "held")
        self.assertEqual(w.wait(support.DEADLINE), 0)
        lines = assert_no_overlap(self, work)
        self.assertEqual([l[1] for l in lines], ["client", "client", "wrapper", "wrapper"])



class RedisHeavySlotTests(support.RedisCaseMixin, HeavySlotTests):
    pass
