"""What ``slots()`` returns: Resource, Holder, Waiter. Imported on first use."""

from __future__ import annotations

import dataclasses

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List


@dataclasses.dataclass
class Holder:
    lease_id: str
    session: str
    host: str
    pid: int
    weight: int
    token: int
    acquired_at: str = ""
    heartbeat_at: str = ""
    expires_at: str = ""
    command: str = ""
    governor_pid: int = 0


@dataclasses.dataclass
class Waiter:
    id: str
    session: str
    pid: int
    weight: int
    enqueued_at: str = ""


@dataclasses.dataclass
class Resource:
    resource: str
    limit: int
    used: int
    free: int
    holders: "List[Holder]"
    waiters: "List[Waiter]"


def _dc(cls: "Any", d: "Dict[str, Any]") -> "Any":
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in d.items() if k in names})


def resources(r: "Dict[str, Any]") -> "List[Resource]":
    """The slots reply's resources."""
    return [Resource(resource=x["resource"], limit=x["limit"], used=x["used"], free=x["free"],
                     holders=[_dc(Holder, h) for h in x.get("holders") or []],
                     waiters=[_dc(Waiter, w) for w in x.get("waiters") or []])
            for x in r.get("resources") or []]
