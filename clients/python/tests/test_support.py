"""The suite itself: a missing binary fails it when it must run."""

from __future__ import annotations

import os
import unittest
from unittest import mock

from tests import support

import governor


def _missing() -> str:
    raise governor.BackendError("governor binary not found")


class MissingBinaryTest(unittest.TestCase):
    def test_fails_when_required(self) -> None:
        for env in ({"GOVERNOR_REQUIRE_BRIDGE": "1"}, {"CI": "true"}):
            with self.subTest(env=env), mock.patch.dict(os.environ, env), \
                    mock.patch.object(support.governor, "find_binary", _missing):
                try:
                    with self.assertRaisesRegex(RuntimeError, "must not skip"):
                        support.binary()
                except unittest.SkipTest as e:  # what it must not do
                    self.fail("skipped: %s" % e)

    def test_skips_otherwise(self) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("GOVERNOR_REQUIRE_BRIDGE", "CI")}
        with mock.patch.dict(os.environ, env, clear=True), \
                mock.patch.object(support.governor, "find_binary", _missing):
            with self.assertRaises(unittest.SkipTest):
                support.binary()
