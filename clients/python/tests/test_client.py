"""The issue's Tests list, on the file backend and a real redis-server."""

from __future__ import annotations

import _thread
import asyncio
import json
import os
import select
import subprocess
import sys
import signal
import threading
import time
import unittest

from tests import support
from tests.support import assert_no_overlap, read_lines

import governor


class ClientTests(support.FileCase):

    def test_two_processes_never_overlap(self) -> None:
        iv = self.path("intervals")
        ps = [self.worker("hold", "one", iv, "0.05") for _ in range(4)]
        for p in ps:
            self.assertEqual(p.wait(support.DEADLINE), 0)
        lines = assert_no_overlap(self, iv)
        self.assertEqual(len(lines), 8, lines)

    def test_tokens_increase(self) -> None:
        g = self.gov()
        tokens = []
        for _ in range(5):
            with g.slot("tok", limit=1) as lease:
                tokens.append(lease.token)
        p = self.worker("hold", "tok", self.path("iv"), "0")
        tokens.append(json.loads(p.stdout.readline())["token"])
        self.assertEqual(p.wait(support.DEADLINE), 0)
        self.assertEqual(tokens, sorted(set(tokens)), "tokens must strictly increase: %s" % tokens)

    def test_sigkilled_client_slot_goes_to_next_waiter(self) -> None:
        iv = self.path("iv")
        a = self.worker("forever", "k", iv)
        json.loads(a.stdout.readline())
        b = self.worker("hold", "k", iv, "0")
        g = self.gov()
        self.wait_for("b queued", lambda: any(r.waiters for r in g.slots("k")))
        t0 = time.monotonic()
        support.kill(a.pid)
        json.loads(b.stdout.readline())
        handoff = time.monotonic() - t0
        self.assertEqual(b.wait(support.DEADLINE), 0)
        self.assertLess(handoff, 1.0, "the next waiter got the slot %.3fs after the holder was killed" % handoff)
        self.assertEqual([l[0] for l in read_lines(iv)], ["S", "S", "E"])  # a died holding it: no E

    def test_sigkilled_bridge_stops_the_body_before_the_next_holder(self) -> None:
        iv = self.path("iv")
        env_ttl = {"WORKER_TTL": "2"}
        os.environ.update(env_ttl)
        self.addCleanup(os.environ.pop, "WORKER_TTL", None)
        a = self.worker("until-lost", "b", iv)
        info = json.loads(a.stdout.readline())
        b = self.worker("hold", "b", iv, "0")
        g = self.gov()
        self.wait_for("b queued", lambda: any(r.waiters for r in g.slots("b")))
        support.kill(info["bridge"])
        self.assertEqual(a.wait(support.DEADLINE), 122)
        self.assertEqual(b.wait(support.DEADLINE), 0)
        lines = assert_no_overlap(self, iv)
        self.assertEqual([(l[0], l[1]) for l in lines],
                         [("S", str(a.pid)), ("E", str(a.pid)), ("S", str(b.pid)), ("E", str(b.pid))])

    def test_force_takeover_fires_lost(self) -> None:
        g, other = self.gov(), self.gov(session="taker")
        with self.assertRaises(governor.LeaseLost):
            with g.slot("tk", limit=1, ttl=2, stop_on_lost=False) as lease:
                first = lease.token
                new = other.takeover("tk", lease_id=lease.resources[0]["lease_id"], force=True, limit=1)
                self.assertTrue(lease.lost.wait(support.DEADLINE), "lost never fired after a forced takeover")
                self.assertGreater(new.token, first)
                with self.assertRaises(governor.Busy):  # fenced: the old holder's writes are refused
                    lease.seq_next("version")
        self.assertEqual(new.seq_next("version"), 1)
        new.release()

    def test_loss_read_by_the_waiting_main_thread_stops_the_body(self) -> None:
        # The main thread, waiting in a call, reads the bridge's output
        # itself: the loss of its slot that it reads there still stops the
        # body (its callbacks run once it stops reading). Also where
        # SIGINT is ignored (a script's background job: interrupt_main
        # does nothing there) or has a handler that does not raise.
        for name, handler in (("python's", signal.default_int_handler), ("ignored", signal.SIG_IGN),
                              ("a handler of the process", lambda *_: None)):
            with self.subTest(sigint=name):
                self.addCleanup(signal.signal, signal.SIGINT, signal.signal(signal.SIGINT, handler))
                g, other = self.gov(), self.gov(session="taker")
                blocker = other.acquire("lw-busy", limit=1)
                try:
                    with self.assertRaises(governor.LeaseLost):
                        with g.slot("lw", limit=1, ttl=2) as lease:
                            def take() -> None:
                                self.wait_for("the body queued", lambda: any(r.waiters for r in other.slots("lw-busy")))
                                other.takeover("lw", lease_id=lease.resources[0]["lease_id"], force=True, limit=1).release()
                            threading.Thread(target=take, daemon=True).start()
                            g.acquire("lw-busy", limit=1, wait=True, timeout=support.DEADLINE)
                    self.assertEqual(other.slots("lw-busy")[0].waiters, [], "the interrupted wait was left queued")
                finally:
                    blocker.release()

    def test_interrupted_wait_is_cancelled_and_the_bridge_serves_on(self) -> None:
        # Ctrl-C while the main thread waits (reading the bridge's output
        # itself): the wait is withdrawn, and nothing read is lost. Ctrl-C
        # as in an interactive process: with Python's SIGINT handler (a
        # script's background job ignores SIGINT, and interrupt_main then).
        self.addCleanup(signal.signal, signal.SIGINT, signal.signal(signal.SIGINT, signal.default_int_handler))
        g, other = self.gov(), self.gov(session="holder")
        kept = g.acquire("iw-kept", limit=1)
        blocker = other.acquire("iw-busy", limit=1)
        self.addCleanup(blocker.release)

        def interrupt() -> None:
            self.wait_for("the wait queued", lambda: any(r.waiters for r in other.slots("iw-busy")))
            _thread.interrupt_main()
        threading.Thread(target=interrupt, daemon=True).start()
        with self.assertRaises(KeyboardInterrupt):
            g.acquire("iw-busy", limit=1, wait=True, timeout=support.DEADLINE)
        kept.touch()
        self.assertFalse(kept.lost.is_set())
        self.assertEqual(other.slots("iw-busy")[0].waiters, [])
        for _ in range(20):  # replies still pair with their requests
            self.assertEqual(len(g.slots("iw-kept")[0].holders), 1)
        kept.release()

    def test_busy_names_the_holder(self) -> None:
        g, other = self.gov(), self.gov()
        with g.slot("bz", limit=1):
            with self.assertRaises(governor.Busy) as cm:
                with other.slot("bz", limit=1):
                    pass
        e = cm.exception
        self.assertEqual((e.code, e.resource, len(e.holders)), (73, "bz", 1))
        self.assertEqual(e.holders[0]["pid"], os.getpid())
        with g.slot("bz", limit=1):
            with self.assertRaises(governor.Skipped):
                other.acquire("bz", limit=1, if_busy="skip")
            with self.assertRaises(governor.Busy):
                other.acquire("bz", limit=1, timeout=0.2)

    def test_forked_child_does_not_inherit(self) -> None:
        if not hasattr(os, "fork"):
            self.skipTest("no fork")
        g = self.gov()
        with g.slot("fk", limit=1) as lease:
            parent_bridge = g.bridge_pid
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: its own bridge, none of the parent's leases
                code = 1
                try:
                    with g.slot("fk", limit=1):
                        code = 2
                except governor.Busy:
                    code = 0 if g.bridge_pid != parent_bridge else 3
                except BaseException:
                    code = 4
                os.write(w, bytes([code]))
                os._exit(0)
            os.close(w)
            ready, _, _ = select.select([r], [], [], support.DEADLINE)
            if not ready:
                support.kill(pid)
                os.waitpid(pid, 0)
                self.fail("the forked child hung: it used its parent's bridge")
            code = os.read(r, 1)
            os.close(r)
            os.waitpid(pid, 0)
            self.assertEqual(code, b"\x00", "child: 2 got the parent's slot, 3 shared its bridge, 4 failed")
            self.assertFalse(lease.lost.is_set())
            self.assertEqual(len(g.slots("fk")[0].holders), 1)

    def test_async_slot_cancels_the_body_on_loss(self) -> None:
        g, other = self.gov(), self.gov()

        async def body() -> str:
            async with g.aslot("as", limit=1, ttl=2) as lease:
                other.takeover("as", lease_id=lease.resources[0]["lease_id"], force=True, limit=1).release()
                await asyncio.sleep(5)
                return "ran on"
            return "not reached"
        with self.assertRaises(governor.LeaseLost):
            asyncio.run(body())

    def test_async_wait_and_cancel(self) -> None:
        g, other = self.gov(), self.gov()

        async def main() -> None:
            with g.slot("aw", limit=1):
                t = asyncio.ensure_future(other.aacquire("aw", limit=1, wait=True))
                await asyncio.sleep(0.2)
                t.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await t
            async with other.aslot("aw", limit=1) as lease:  # nothing was left queued or held
                self.assertGreater(lease.token, 0)
        asyncio.run(main())

    def test_record_writes_grant_and_end(self) -> None:
        rec = self.path("waits.jsonl")
        g = self.gov()
        with g.slot("rc", limit=1, record=rec) as lease:
            pass
        with open(rec) as f:
            lines = [json.loads(l) for l in f]
        self.assertEqual([l["kind"] for l in lines], ["grant", "end"])
        self.assertEqual(lines[1]["outcome"], "ran")
        self.assertEqual(lines[0]["resources"][0]["token"], lease.token)
        self.assertGreaterEqual(lines[0]["wait_seconds"], 0)
        # The same acquire through governor run --record: the same record of
        # each resource, field by field (one builder), but its own lease.
        cli = self.path("cli.jsonl")
        out = subprocess.run([support.binary(), "run", "--record", cli, "--resource", "rc", "--limit", "1", "--", "true"],
                             env=self.backend.env(), capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        with open(cli) as f:
            cli_lines = [json.loads(l) for l in f]
        self.assertEqual([l["kind"] for l in cli_lines], ["grant", "end"])
        for mine, theirs in zip(lines, cli_lines):
            strip = lambda rs: [{k: v for k, v in r.items() if k not in ("lease", "token")} for r in rs]
            self.assertEqual(strip(mine["resources"]), strip(theirs["resources"]))
            self.assertEqual(strip(mine["resources"]), [{"name": "rc", "weight": 1, "limit": 1, "nested": False}])
            self.assertEqual(mine["nested"], theirs["nested"])
            self.assertEqual(sorted(mine), sorted(theirs))

    def test_nests_inside_governor_run(self) -> None:
        env = self.backend.env()
        code = ("import governor\n"
                "with governor.slot('heavy', limit=1) as l:\n"
                "    print(l.nested, l.token)\n")
        out = subprocess.run([support.binary(), "run", "--resource", "heavy", "--limit", "1", "--",
                              sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             timeout=support.DEADLINE)
        self.assertEqual(out.returncode, 0, out.stderr)
        nested, token = out.stdout.split("]")
        self.assertEqual(nested + "]", "['heavy']")
        self.assertGreater(int(token), 0)

    def test_decorator_sync_and_async(self) -> None:
        g = self.gov()

        @g.governed("dc", limit=1)
        def f(x: int) -> int:
            return x + 1

        @g.governed("dc", limit=1)
        async def af(x: int) -> int:
            return x + 2
        self.assertEqual(f(1), 2)
        self.assertEqual(asyncio.run(af(1)), 3)

    def test_slot_object_holds_one_lease(self) -> None:
        # A slot object shared by two threads or tasks would keep only the
        # second lease and release it twice: entering it again is refused,
        # and the first lease stays the one it releases.
        g = self.gov()
        s = g.slot("one", limit=2)
        with s as first:
            with self.assertRaises(RuntimeError) as cm:
                s.__enter__()
            self.assertIn(first.id, str(cm.exception))

            async def again() -> None:
                async with s:
                    pass
            with self.assertRaises(RuntimeError):
                asyncio.run(again())
            (r,) = g.slots("one")
            self.assertEqual(r.used, 1)
        self.assertTrue(first.released)
        (r,) = g.slots("one")
        self.assertEqual(r.used, 0)
        with s as second:  # released: the object may hold a lease again
            self.assertNotEqual(second.id, first.id)

    def test_slots_dataclasses(self) -> None:
        g = self.gov()
        with g.slot("sl", limit=2, weight=2) as lease:
            (r,) = g.slots("sl")
            self.assertEqual((r.resource, r.limit, r.used, r.free), ("sl", 2, 2, 0))
            self.assertEqual(r.holders[0].token, lease.token)

    def test_bad_option_is_refused(self) -> None:
        with self.assertRaises(TypeError):
            self.gov().slot("x", limt=1)
        with self.assertRaises(governor.GovernorError) as cm:
            self.gov().acquire("provider:x")  # a provider with no configuration
        self.assertIn("providers.x.max_concurrency", str(cm.exception))
        # Bad input, not a backend error a caller might retry.
        self.assertNotIsInstance(cm.exception, governor.BackendError)
        self.assertEqual((cm.exception.kind, cm.exception.code), ("failure", 125))


class RedisClientTests(support.RedisCaseMixin, ClientTests):
    pass


class ProtocolTests(unittest.TestCase):

    def test_refuses_another_protocol(self) -> None:
        fake = os.path.join(os.path.dirname(__file__), "fake_bridge.py")
        with self.assertRaises(governor.ProtocolError) as cm:
            governor.Governor(binary=fake).acquire("x", limit=1)
        msg = str(cm.exception)
        self.assertIn("protocol 2", msg)
        self.assertIn("protocol 1", msg)


if __name__ == "__main__":
    unittest.main()
