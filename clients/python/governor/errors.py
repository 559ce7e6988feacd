"""Exceptions named for what happened, with what the CLI prints."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

__all__ = [
    "GovernorError", "Busy", "Skipped", "Withdrawn", "Superseded", "LeaseLost",
    "BackendError", "Cancelled", "ProtocolError",
]


class GovernorError(Exception):
    """Base of every governor error. ``code`` is the CLI's exit code for it
    (73 busy, 75 skipped, 76 superseded, 122 lost, 125 failure), ``kind``
    the bridge's word, ``message`` the CLI's message; ``resource``,
    ``rule``, ``holders`` (dicts as ``governor slots --json``),
    ``retry_after`` (seconds) and ``budget`` (the spend budget that
    refused: a dict of name, unit, reason, spent, reserved, limit,
    estimate, reset) when the bridge said them."""

    code = 125
    kind = "failure"

    def __init__(self, message: str, *, code: Optional[int] = None, kind: Optional[str] = None,
                 resource: str = "", rule: str = "", holders: Optional[List[Dict[str, Any]]] = None,
                 retry_after: Optional[float] = None, budget: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if kind is not None:
            self.kind = kind
        self.resource = resource
        self.rule = rule
        self.holders = holders or []
        self.retry_after = retry_after
        self.budget = budget

    def __str__(self) -> str:
        lines = [self.message]
        for h in self.holders:
            lines.append("  held by %s (pid %s on %s, token %s)" % (
                h.get("session", "?"), h.get("pid", "?"), h.get("host", "?"), h.get("token", "?")))
        return "\n".join(lines)


class Busy(GovernorError):
    """Not acquired: busy (``wait=False``), or the wait ``timeout`` passed."""
    code, kind = 73, "busy"


class Skipped(GovernorError):
    """Not acquired: busy with ``if_busy="skip"``."""
    code, kind = 75, "skipped"


class Withdrawn(Busy):
    """The wait was withdrawn by an admin (``governor cancel``)."""
    kind = "withdrawn"


class Superseded(GovernorError):
    """The wait was replaced by a newer acquire with the same supersede key."""
    code, kind = 76, "superseded"


class LeaseLost(GovernorError):
    """The lease is not held any more (expired, taken over, the bridge died):
    the work it protects must stop."""
    code, kind = 122, "lost"


class BackendError(GovernorError):
    """The backend (Redis, the state directory) or the bridge failed."""
    kind = "backend"


class ProtocolError(BackendError):
    """The bridge speaks another protocol than this client."""
    kind = "protocol"


class Cancelled(GovernorError):
    """The request was cancelled (``cancel_request``)."""
    kind = "cancelled"


_BY_KIND = {
    "busy": Busy, "skipped": Skipped, "withdrawn": Withdrawn, "superseded": Superseded,
    "lost": LeaseLost, "backend": BackendError, "protocol": ProtocolError, "cancelled": Cancelled,
    "timeout": Busy,
}


def from_wire(e: Dict[str, Any]) -> GovernorError:
    """The exception for a reply's error object."""
    cls = _BY_KIND.get(e.get("kind", ""), GovernorError)
    return cls(e.get("message", "governor bridge error"), code=e.get("code"), kind=e.get("kind"),
               resource=e.get("resource", ""), rule=e.get("rule", ""), holders=e.get("holders"),
               retry_after=e.get("retry_after"), budget=e.get("budget"))
