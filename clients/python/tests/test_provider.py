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
        # governor run exports the nesting variables; the gate sends them
        # with provider_acquire, as slot does with acquire.
        code = ("import governor\n"
                "print(governor.Governor(config=%r).provider('anthropic').call(lambda: 'ran'))\n" % self.config)
        out = subprocess.run([support.binary(), "run", "--resource", "heavy", "--limit", "1", "--",
                              sys.executable, "-c", code], env=self.backend.env(), capture_output=True, text=True,
                             timeout=support.DEADLINE)
        self.assertEqual((out.returncode, out.stdout), (0, "ran\n"), out.stderr)

    def test_gate_nests_inside_governor_run_of_its_provider(self) -> None:
        # max_concurrency 1, held by the enclosing governor run --provider:
        # the gate's call joins that hold (as a nested governor run
        # --provider does), neither Busy nor waiting for itself.
        code = ("import governor\n"
                "g = governor.Governor(config=%r)\n"
                "print(g.provider('anthropic', wait=False).call(lambda: 'ran'))\n"
                "print(g.provider('anthropic', wait=False).call(lambda: 'again'))\n" % self.config)
        out = subprocess.run([support.binary(), "--config", self.config, "run", "--provider", "anthropic", "--",
                              sys.executable, "-c", code], env=self.backend.env(), capture_output=True, text=True,
                             timeout=support.DEADLINE)
        self.assertEqual((out.returncode, out.stdout), (0, "ran\nagain\n"), out.stderr)

    def test_gate_out_of_lock_order_is_bad_input(self) -> None:
        # provider:anthropic comes before zz, which the run holds: the gate
        # is refused as a nested run would be, as bad input (not a
        # BackendError, which callers retry as temporary).
        code = ("import governor\n"
                "try:\n"
                "    governor.Governor(config=%r).provider('anthropic').call(lambda: None)\n"
                "except governor.GovernorError as e:\n"
                "    print(type(e).__name__, e.kind)\n" % self.config)
        out = subprocess.run([support.binary(), "run", "--resource", "zz", "--limit", "1", "--",
                              sys.executable, "-c", code], env=self.backend.env(), capture_output=True, text=True,
                             timeout=support.DEADLINE)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertNotIn("BackendError", out.stdout)
        self.assertTrue(out.stdout.endswith(" failure\n"), out.stdout)

    def test_usage_settles_the_token_reservation(self) -> None:
        # Rates only: 6000 tokens a minute, 100 a second refilled. The
        # first call reserves them all and uses 1000: the other 5000 are
        # given back, so a second call of 5000 fits at once.
        with open(self.config, "w") as f:
            f.write("providers:\n  anthropic: {tokens_per_minute: 6000}\n")
        p = self.gov(config=self.config).provider("anthropic", wait=False)
        body = {"usage": {"input_tokens": 400, "output_tokens": 600}}
        self.assertEqual(p.call(lambda: body, tokens=6000), body)
        self.assertEqual(p.call(lambda: "no usage", tokens=5000), "no usage")
        with self.assertRaises(governor.Busy):  # no usage: it stays at its estimate
            p.call(lambda: None, tokens=5000)

    def test_backoff_is_shared(self) -> None:
        g = self.gov(config=self.config)
        until = g.backoff("anthropic", retry_after=30)
        self.assertTrue(until)
        events = g.events("provider:anthropic")
        self.assertIn("cooloff", [e["kind"] for e in events])


class RedisProviderTests(support.RedisCaseMixin, ProviderTests):
    pass
