"""The provider gate from Python: its slot counts across processes, and a
rate-limit signal cools the provider off for everyone."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import unittest

from tests import support

import governor



class ProviderTests(support.FileCase):

    def setUp(self) -> None:
        super().setUp()
        self.config = self.path("exec-defaults.yaml")
        with open(self.config, "w") as f:
            f.write("providers:\n  anthropic: {max_concurrency: 1}\n")
        os.chmod(self.config, 0o600)

    def test_gate_counts_across_bridges(self) -> None:
        g, other = self.gov(config=self.config), self.gov(config=self.config)
        p = g.provider("anthropic")

        def inside() -> str:
            with self.assertRaises(governor.Busy):
                other.provider("anthropic", wait=False).call(lambda: None)
            return "answer"
        self.assertEqual(p.call(inside), "answer")
        self.assertEqual(asyncio.run(other.provider("anthropic").acall(asyncio.sleep, 0, "a")), "a")

    def test_rate_limited_call_cools_off_everyone(self) -> None:
        g, other = self.gov(config=self.config), self.gov(config=self.config)

        def limited() -> None:
            raise governor.RateLimited(retry_after=30, headers={"retry-after": "30"})
        with self.assertRaises(governor.RateLimited):
            g.provider("anthropic").call(limited)
        with self.assertRaises(governor.Busy) as cm:
            other.provider("anthropic", wait=False).call(lambda: None)
        self.assertIsNotNone(cm.exception.retry_after)

    def test_gate_runs_inside_governor_run(self) -> None:
        # governor run exports the nesting variables; the gate's
        # provider_acquire takes none (as the TypeScript client's).
        code = ("import governor\n"
                "print(governor.Governor(config=%r).provider('anthropic').call(lambda: 'ran'))\n" % self.config)
        out = subprocess.run([support.binary(), "run", "--resource", "heavy", "--limit", "1", "--",
                              sys.executable, "-c", code], env=self.backend.env(), capture_output=True, text=True,
                             timeout=support.DEADLINE)
        self.assertEqual((out.returncode, out.stdout), (0, "ran\n"), out.stderr)

    def test_backoff_is_shared(self) -> None:
        g = self.gov(config=self.config)
        until = g.backoff("anthropic", retry_after=30)
        self.assertTrue(until)
        events = g.events("provider:anthropic")
        self.assertIn("cooloff", [e["kind"] for e in events])


class RedisProviderTests(support.RedisCaseMixin, ProviderTests):
    pass
