"""governor from Python: cross-process slots, leases and rate limits.

    import governor
    with governor.slot("heavy", wait=True, record="waits.jsonl") as lease:
        run_eval(lease.token)

Every call goes through one ``governor bridge`` co-process per process
(docs/bridge-protocol.md); the engine is governor's own, in Go.
"""

from __future__ import annotations

from .errors import (BackendError, Busy, Cancelled, GovernorError, LeaseLost, ProtocolError, Skipped,
                     Superseded, Withdrawn)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, List

    from ._admin import Holder, Resource, Waiter
    from ._api import Governor, default
    from ._bridge import PROTOCOL, find_binary
    from ._budget import Budget, Price, Usage, usage_from_json
    from ._lease import Lease
    from ._provider import Provider, RateLimited
    from ._version import __version__

# Imported on first use (PEP 562): ``import governor`` loads this module and
# the exceptions; the first slot the client (_api, _lease, _bridge); a sync slot
# never the admin dataclasses or providers.
_LAZY = {"Governor": "_api", "Lease": "_lease", "default": "_api", "PROTOCOL": "_bridge", "find_binary": "_bridge",
         "Holder": "_admin", "Resource": "_admin", "Waiter": "_admin", "Provider": "_provider",
         "RateLimited": "_provider", "__version__": "_version", "Budget": "_budget", "Price": "_budget",
         "Usage": "_budget", "usage_from_json": "_budget"}


def __getattr__(name: str) -> "Any":
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError("module 'governor' has no attribute %r" % name)
    value = getattr(__import__(__name__ + "." + mod, None, None, [name]), name)
    globals()[name] = value
    return value


def __dir__() -> "List[str]":
    return sorted(set(globals()) | set(_LAZY))


def _default() -> "Governor":
    from ._api import default
    return default()


__all__ = [
    "Governor", "Lease", "Provider", "RateLimited", "Resource", "Holder", "Waiter",
    "slot", "aslot", "acquire", "governed", "provider", "slots", "takeover", "backoff", "default",
    "GovernorError", "Busy", "Skipped", "Withdrawn", "Superseded", "LeaseLost", "BackendError",
    "ProtocolError", "Cancelled", "PROTOCOL", "find_binary", "Budget", "Price", "Usage", "usage_from_json",
]


def slot(*resources: str, **opts: Any) -> Any:
    """``with governor.slot("heavy", wait=True) as lease:`` (see Governor.slot)."""
    return _default().slot(*resources, **opts)


def aslot(*resources: str, **opts: Any) -> Any:
    """``async with governor.aslot("heavy", wait=True) as lease:``; the body
    is cancelled when the lease is lost (``stop_on_lost=False`` to keep it)."""
    return _default().slot(*resources, **opts)


def acquire(*resources: str, **opts: Any) -> "Lease":
    return _default().acquire(*resources, **opts)


def governed(*resources: str, **opts: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@governor.governed("heavy", wait=True)`` for sync and async functions."""
    return _default().governed(*resources, **opts)


def provider(name: str, **kw: Any) -> "Provider":
    return _default().provider(name, **kw)


def slots(*resources: str) -> "List[Resource]":
    return _default().slots(*resources)


def takeover(*a: Any, **kw: Any) -> "Lease":
    return _default().takeover(*a, **kw)


def backoff(provider: str, retry_after: Any = None) -> str:
    return _default().backoff(provider, retry_after)
