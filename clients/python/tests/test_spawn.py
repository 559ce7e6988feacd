"""The bridge's process, started with posix_spawn: it gets no descriptor of
ours but its pipes and stderr (as subprocess's close_fds)."""

from __future__ import annotations

import os
import select
import unittest

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


if __name__ == "__main__":
    unittest.main()
