"""An interrupt (KeyboardInterrupt) at the worst moments of a request:
no request is left without its reply, no lease without its release."""

from __future__ import annotations

import os
from typing import Any, Dict, List

from tests import support

import governor
from governor import _bridge


class _ForgetThenInterrupt(dict):  # type: ignore[type-arg]
    """A pending-requests map whose pop forgets, then raises as an
    interrupt landing right after it would."""

    armed = True

    def pop(self, *a: Any) -> Any:
        v = super().pop(*a)
        if self.armed:
            self.armed = False
            raise KeyboardInterrupt
        return v


class _InterruptAfterWrite:
    """os, as _bridge sees it, whose write of an acquire request writes it
    whole and then raises as an interrupt landing right after it."""

    def __init__(self) -> None:
        self.armed = True

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, fd: int, data: bytes) -> int:
        n = os.write(fd, data)
        if self.armed and b'"acquire"' in bytes(data):
            self.armed = False
            raise KeyboardInterrupt
        return n


class InterruptTests(support.FileCase):

    def test_a_reply_dispatched_again_still_calls_back(self) -> None:
        # An interrupt between forgetting a request and calling its callback
        # left an asyncio request waiting for ever: the line, not marked
        # read, is dispatched again, and must then still call back.
        b = self.gov()._bridge()
        got: List[Dict[str, Any]] = []
        p = _bridge._Pending(None, got.append)
        saved = b._pending
        b._pending = _ForgetThenInterrupt({99999: p})
        line = bytearray(b'{"id":99999,"ok":true,"result":{}}')
        try:
            with self.assertRaises(KeyboardInterrupt):
                b._dispatch(line)
            b._dispatch(line)  # the same line, read again
        finally:
            b._pending = saved
        self.assertTrue(got, "the request's callback was never called")
        self.assertEqual(got[0]["id"], 99999)

    def test_interrupt_right_after_the_request_is_written_releases_the_lease(self) -> None:
        g = self.gov()
        g.acquire("warm", limit=1).release()  # the bridge is up
        proxy = _InterruptAfterWrite()
        _bridge.os = proxy  # type: ignore[assignment]
        try:
            with self.assertRaises(KeyboardInterrupt):
                g.acquire("ki", limit=1)
        finally:
            _bridge.os = os  # type: ignore[assignment]
        self.assertFalse(proxy.armed, "the interrupt was not injected")
        # The acquire was granted; the interrupted caller never got the
        # Lease: the client must have released it (else this waits until
        # the bridge closes, and fails with Busy).
        g.acquire("ki", limit=1, timeout=support.DEADLINE).release()

    def test_cancelled_async_acquire_releases_what_it_was_granted(self) -> None:
        import asyncio
        g = self.gov()
        g.acquire("warm", limit=1).release()

        async def main() -> None:
            t = asyncio.ensure_future(g.aacquire("ac", limit=1))
            await asyncio.sleep(0)  # the request is written; its grant is on its way
            t.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await t
        asyncio.run(main())
        g.acquire("ac", limit=1, timeout=support.DEADLINE).release()


class RedisInterruptTests(support.RedisCaseMixin, InterruptTests):
    pass


if __name__ == "__main__":
    import unittest
    unittest.main()
