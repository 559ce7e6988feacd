"""The provider gate from Python: its slot counts across processes, and a
rate-limit signal cools the provider off for everyone."""

from __future__ import annotations

import asyncio
import os
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

    def test_backoff_is_shared(self) -> None:
        g = self.gov(config=self.config)
        until = g.backoff("anthropic", retry_after=30)
        self.assertTrue(until)
        events = g.events("provider:anthropic")
        self.assertIn("cooloff", [e["kind"] for e in events])


class RedisProviderTests(support.RedisCaseMixin, ProviderTests):
    pass
