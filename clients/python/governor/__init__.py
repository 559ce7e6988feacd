"""governor from Python: cross-process slots, leases and rate limits.

    import governor
    with governor.slot("heavy", wait=True, record="waits.jsonl") as lease:
        run_eval(lease.token)

Every call goes through one ``governor bridge`` co-process per process
(docs/bridge-protocol.md); the engine is governor's own, in Go.
"""

from __future__ import annotations

from typing import Any, Callable, List

from ._api import Governor, Holder, Lease, Provider, RateLimited, Resource, Waiter, default
from ._bridge import PROTOCOL, find_binary
from .errors import (BackendError, Busy, Cancelled, GovernorError, LeaseLost, ProtocolError, Skipped,
                     Superseded, Withdrawn)

from ._version import __version__

__all__ = [
    "Governor", "Lease", "Provider", "RateLimited", "Resource", "Holder", "Waiter",
    "slot", "aslot", "acquire", "governed", "provider", "slots", "takeover", "backoff", "default",
    "GovernorError", "Busy", "Skipped", "Withdrawn", "Superseded", "LeaseLost", "BackendError",
    "ProtocolError", "Cancelled", "PROTOCOL", "find_binary",
]


def slot(*resources: str, **opts: Any) -> Any:
    """``with governor.slot("heavy", wait=True) as lease:`` (see Governor.slot)."""
    return default().slot(*resources, **opts)


def aslot(*resources: str, **opts: Any) -> Any:
    """``async with governor.aslot("heavy", wait=True) as lease:``; the body
    is cancelled when the lease is lost (``stop_on_lost=False`` to keep it)."""
    return default().slot(*resources, **opts)


def acquire(*resources: str, **opts: Any) -> Lease:
    return default().acquire(*resources, **opts)


def governed(*resources: str, **opts: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@governor.governed("heavy", wait=True)`` for sync and async functions."""
    return default().governed(*resources, **opts)


def provider(name: str, **kw: Any) -> Provider:
    return default().provider(name, **kw)


def slots(*resources: str) -> List[Resource]:
    return default().slots(*resources)


def takeover(*a: Any, **kw: Any) -> Lease:
    return default().takeover(*a, **kw)


def backoff(provider: str, retry_after: Any = None) -> str:
    return default().backoff(provider, retry_after)
