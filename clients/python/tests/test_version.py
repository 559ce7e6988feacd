"""One version: the client's ``__version__``, the name it gives the bridge,
and the engine version the bridge's hello reports are the same (the
release stamps all three from the VERSION file)."""

from __future__ import annotations

import re

from . import support
from .support import governor


class VersionTests(support.FileCase):
    def test_client_and_engine_agree(self) -> None:
        self.assertRegex(governor.__version__, r"^\d+\.\d+\.\d+")
        self.assertEqual(governor._bridge.CLIENT, "python/" + governor.__version__)
        g = self.gov()
        self.assertEqual(g.engine_version, governor.__version__,
                         "the binary the bridge runs is another version than this client")
        self.assertTrue(g.engine_commit == "" or re.match(r"^[0-9a-f]{7,40}(-dirty)?$", g.engine_commit),
                        "engine_commit %r: want a commit id or nothing" % g.engine_commit)


if __name__ == "__main__":
    import unittest
    unittest.main()
