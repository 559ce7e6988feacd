"""The bridge's process, started with posix_spawn: it gets no descriptor of
ours but its pipes and stderr (as subprocess's close_fds)."""

from __future__ import annotations

import os
import select
import sys
import unittest
from unittest import mock

from tests import support


class SpawnTests(support.FileCase):

    def test_an_inheritable_descriptor_of_ours_is_not_the_bridges(self) -> None:
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        os.set_inheritable(w, True)
        try:
            g = self.gov()
            g.slots()  # the bridge is up
        finally:
            os.close(w)
        # Had the bridge inherited the write end, the pipe would not end.
        ready, _, _ = select.select([r], [], [], support.DEADLINE)
        self.assertEqual(ready, [r], "the bridge holds our pipe's write end")
        self.assertEqual(os.read(r, 1), b"")

    @unittest.skipUnless(sys.platform.startswith("linux"), "reads /proc/PID/environ")
    def test_the_bridge_starts_with_one_processor_unless_ours_says(self) -> None:
        # GOMAXPROCS=1 from its start spares the bridge's runtime a stop
        # to shrink to one processor (docs/benchmarks.md); a value of
        # ours is the bridge's.
        for ours, want in ((None, "1"), ("3", "3")):
            with self.subTest(ours=ours), mock.patch.dict(os.environ):
                os.environ.pop("GOMAXPROCS", None)
                if ours is not None:
                    os.environ["GOMAXPROCS"] = ours
                g = self.gov()
                with open("/proc/%d/environ" % g._bridge().proc.pid, "rb") as f:
                    env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
                g.close()
                self.assertEqual(env.get(b"GOMAXPROCS"), want.encode())

    def test_the_bridge_has_a_session_of_its_own(self) -> None:
        # A Ctrl-C in the terminal (SIGINT to the foreground process group)
        # reaches this process alone, which ends its bridge in order.
        g = self.gov()
        pid = g._bridge().proc.pid
        self.assertNotEqual(os.getsid(pid), os.getsid(0))
        self.assertNotEqual(os.getpgid(pid), os.getpgid(0))
        self.assertEqual(os.getsid(pid), pid)


if __name__ == "__main__":
    unittest.main()
