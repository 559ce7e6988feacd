"""The wait record of ``slot(..., record=PATH)``: the same grant and end
lines as ``governor run --record``, to a file opened (and checked as the
CLI checks it) before the slot is asked for. Imported on first use."""

from __future__ import annotations

import datetime
import errno
import json
import os
import socket
import stat
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
        self.fd = open_record(path)  # refused here, before any slot is asked for
        self.base: "Dict[str, Any]" = {
            "id": uuid.uuid4().hex, "host": socket.gethostname(), "pid": os.getpid(),
            "command": "", "resources": [{"name": r, "weight": 1, "limit": 0, "nested": False}
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
        bridge = self.gov._bridge()
        b["command"] = self._command()
        hello = bridge.hello
        b["project"], b["session"] = hello.get("project", ""), hello.get("session", "")
        rec = lease._record or {}  # the bridge builds the resources, as governor run --record does
        b["resources"], b["nested"] = rec.get("resources", b["resources"]), bool(rec.get("nested"))
        if b["nested"]:
            b["wait_seconds"] = 0.0
        self.granted_at = _now()
        self._write(dict(b, kind="grant", start=self.start, granted=self.granted_at))

    def _command(self) -> str:
        """The command line as governor run --record writes it: secrets
        hidden by governor's one rule (the bridge's redact op); the
        client keeps no copy of the rule."""
        return str(self.gov._bridge().call("redact", {"args": list(sys.argv)})["command"])

    def end(self, exc: "Optional[BaseException]") -> None:
        outcome, exit_code = _outcome(exc)
        if not self.base["command"]:
            try:
                self.base["command"] = self._command()
            except Exception:  # the acquire's error is the one to tell; the line goes without
                pass
        rec = dict(self.base, kind="end", start=self.start, outcome=outcome, exit_code=exit_code, end=_now())
        if self.granted_at:
            rec["granted"] = self.granted_at
        else:
            rec["wait_seconds"] = time.monotonic() - self.t0
        try:
            self._write(rec)
        finally:
            self.close()

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def _write(self, rec: "Dict[str, Any]") -> None:
        """One line in one write(2) on the O_APPEND descriptor: concurrent
        writers never interleave. A short write is an error."""
        line = (json.dumps(rec, separators=(",", ":")) + "\n").encode()
        if os.write(self.fd, line) != len(line):
            raise OSError("record %s: a short write" % self.path)


def open_record(path: str) -> int:
    """Opens path for appending as ``governor run --record`` does: the last
    component is never followed if it is a symbolic link, the open never
    blocks (a FIFO with no reader), anything but a regular file is refused,
    as is a file another user owns or can write. A file it creates is 0600
    (lines carry lease ids and tokens). The refusal is a GovernorError
    (code 125) naming the path and what is allowed."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as e:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            mode = 0
        if mode and not stat.S_ISREG(mode):
            raise _not_regular(path, mode) from None
        hint = ""
        folder = os.path.dirname(path) or "."
        if e.errno == errno.ENOENT and not os.path.isdir(folder):
            hint = " (the folder %s does not exist: create it first)" % folder
        raise errors.GovernorError("record %s: %s%s" % (path, e.strerror, hint)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(path, st.st_mode)
        euid = os.geteuid()
        if st.st_uid not in (0, euid):
            why = "owned by uid %d, neither root nor you (uid %d)" % (st.st_uid, euid)
        elif st.st_mode & 0o022:
            why = "writable by group or others (mode %04o)" % (st.st_mode & 0o7777)
        else:
            why = ""
        if why:
            raise errors.GovernorError(
                "record %s is %s: another user could write or rewrite the records (and reads the lease ids and tokens "
                "they carry); refusing to append to it: give a file of your own that only you can write (chmod go-w), "
                "or a new path" % (path, why))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _not_regular(path: str, mode: int) -> errors.GovernorError:
    what = "not a regular file"
    for test, name in ((stat.S_ISLNK, "a symbolic link (not followed)"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
                       (stat.S_ISDIR, "a directory")):
        if test(mode):
            what = name
            break
    return errors.GovernorError("record %s is %s; allowed: a regular file, or a path where one can be created" % (path, what))


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
