"""The wait record of ``slot(..., record=PATH)``: the same grant and end
lines as ``governor run --record``. Imported on first use."""

from __future__ import annotations

import datetime
import json
import os
import socket
import sys
import time
import uuid

from . import errors

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Sequence, Tuple

    from ._api import Governor, Lease


class Record:
    """One invocation's grant and end lines."""

    def __init__(self, path: str, gov: "Governor", resources: "Sequence[str]") -> None:
        self.path, self.gov = path, gov
        self.base: "Dict[str, Any]" = {
            "id": uuid.uuid4().hex, "host": socket.gethostname(), "pid": os.getpid(),
            "command": " ".join(sys.argv), "resources": [{"name": r, "weight": 1, "limit": 0, "nested": False}
                                                        for r in resources],
            "nested": False, "wait_seconds": 0.0,
        }
        runs = os.environ.get("GOVERNOR_RUN_IDS", "").split()
        if runs:
            self.base["outer_run"] = runs[-1]
        self.start = _now()
        self.t0 = time.monotonic()
        self.granted_at = ""

    def granted(self, lease: "Lease") -> None:
        b = self.base
        b["wait_seconds"] = time.monotonic() - self.t0
        hello = self.gov._bridge().hello
        b["project"], b["session"] = hello.get("project", ""), hello.get("session", "")
        rec = lease._record or {}  # the bridge builds the resources, as governor run --record does
        b["resources"], b["nested"] = rec.get("resources", b["resources"]), bool(rec.get("nested"))
        if b["nested"]:
            b["wait_seconds"] = 0.0
        self.granted_at = _now()
        self._write(dict(b, kind="grant", start=self.start, granted=self.granted_at))

    def end(self, exc: "Optional[BaseException]") -> None:
        outcome, exit_code = _outcome(exc)
        rec = dict(self.base, kind="end", start=self.start, outcome=outcome, exit_code=exit_code, end=_now())
        if self.granted_at:
            rec["granted"] = self.granted_at
        else:
            rec["wait_seconds"] = time.monotonic() - self.t0
        self._write(rec)

    def _write(self, rec: "Dict[str, Any]") -> None:
        line = (json.dumps(rec, separators=(",", ":")) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0), 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _outcome(exc: "Optional[BaseException]") -> "Tuple[str, int]":
    if exc is None:
        return "ran", 0
    if isinstance(exc, errors.GovernorError):
        return {"busy": "busy", "withdrawn": "busy", "skipped": "skipped", "superseded": "superseded",
                "lost": "lease_lost"}.get(exc.kind, "error"), exc.code
    aio = sys.modules.get("asyncio")
    if isinstance(exc, KeyboardInterrupt) or aio is not None and isinstance(exc, aio.CancelledError):
        return "interrupted", 130
    return "ran", 1
