"""The co-process: one ``governor bridge`` per Governor configuration and
process, spoken to in newline-delimited JSON (docs/bridge-protocol.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from typing import Any, Callable, Dict, List, Optional

from . import errors

PROTOCOL = 1
CLIENT = "python/0.1.0"

_bridges: "List[Bridge]" = []  # every live bridge of this process, for fork
_bridges_lock = threading.Lock()
_orphans: "List[Any]" = []  # a forked child's copies of its parent's pipes (Bridge._forked)


def find_binary() -> str:
    """The governor binary: $GOVERNOR_BIN, then the one shipped in the
    package (governor/_bin/governor), then ``governor`` on PATH."""
    env = os.environ.get("GOVERNOR_BIN")
    if env:
        return env
    shipped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "governor")
    if os.path.isfile(shipped) and os.access(shipped, os.X_OK):
        return shipped
    found = shutil.which("governor")
    if found:
        return found
    raise errors.BackendError("governor binary not found: set GOVERNOR_BIN, install a wheel that ships it "
                              "(governor/_bin/governor), or put governor on PATH")


class _Pending:
    __slots__ = ("done", "reply", "on_event", "callback")

    def __init__(self, on_event: Optional[Callable[[Dict[str, Any]], None]],
                 callback: Optional[Callable[[Dict[str, Any]], None]]) -> None:
        self.done = threading.Event()
        self.reply: Optional[Dict[str, Any]] = None
        self.on_event = on_event
        self.callback = callback


class Bridge:
    """One running ``governor bridge``. Thread-safe: any thread may send
    requests; a reader thread routes replies and events."""

    def __init__(self, argv: List[str], env: Dict[str, str], session: str = "") -> None:
        self.pid_owner = os.getpid()
        self._wlock = threading.Lock()
        self._lock = threading.Lock()
        self._next = 0
        self._pending: Dict[int, _Pending] = {}
        self._leases: Dict[str, Any] = {}  # bridge lease id -> Lease
        self.dead: Optional[str] = None
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                         close_fds=True, bufsize=-1)
        except OSError as e:
            raise errors.BackendError("cannot start the governor bridge %r: %s" % (argv[0], e)) from None
        self._out = self.proc.stdin
        self._in = self.proc.stdout
        self._reader = threading.Thread(target=self._read, name="governor-bridge-reader", daemon=True)
        self._reader.start()
        args = {"protocol": PROTOCOL, "client": CLIENT, "pid": os.getpid()}
        if session:
            args["session"] = session
        try:
            hello = self.call("hello", args)
        except errors.ProtocolError as e:
            self.close()
            raise errors.ProtocolError("refusing the governor bridge %s: %s (this client speaks protocol %d)"
                                       % (argv[0], e.message, PROTOCOL)) from None
        except errors.GovernorError:
            self.close()
            raise
        if hello.get("protocol") != PROTOCOL:
            self.close()
            raise errors.ProtocolError("refusing the governor bridge %s: it speaks protocol %s, this client protocol %d"
                                       % (argv[0], hello.get("protocol"), PROTOCOL))
        self.hello = hello
        with _bridges_lock:
            _bridges.append(self)

    # -- requests -------------------------------------------------------

    def send(self, op: str, args: Optional[Dict[str, Any]] = None,
             on_event: Optional[Callable[[Dict[str, Any]], None]] = None,
             callback: Optional[Callable[[Dict[str, Any]], None]] = None) -> "tuple[int, _Pending]":
        """Sends a request; the reply arrives in the returned pending
        (callback, if given, is called with it from the reader thread)."""
        p = _Pending(on_event, callback)
        with self._lock:
            if self.dead is not None:
                raise errors.LeaseLost("the governor bridge is gone: " + self.dead)
            self._next += 1
            rid = self._next
            self._pending[rid] = p
        line = json.dumps({"id": rid, "op": op, "args": args or {}}, separators=(",", ":")) + "\n"
        try:
            with self._wlock:
                self._out.write(line.encode())
                self._out.flush()
        except (OSError, ValueError) as e:
            self._gone("cannot write to it: %s" % e)
        return rid, p

    def call(self, op: str, args: Optional[Dict[str, Any]] = None,
             on_event: Optional[Callable[[Dict[str, Any]], None]] = None) -> Dict[str, Any]:
        """Sends a request and waits for its reply: the result, or the
        error raised. A KeyboardInterrupt while waiting cancels the
        request (cancel_request) and is raised once it has ended."""
        rid, p = self.send(op, args, on_event)
        try:
            while not p.done.wait(0.5 if threading.current_thread() is threading.main_thread() else None):
                pass
        except BaseException:
            self.cancel(rid, p)
            raise
        return result_of(p.reply)

    def cancel(self, rid: int, p: _Pending) -> None:
        """Cancels request rid and waits for its reply; a lease it got
        anyway is released."""
        try:
            self.send("cancel_request", {"request": rid})
        except errors.GovernorError:
            return
        p.done.wait(30)
        r = p.reply or {}
        if r.get("ok") and isinstance(r.get("result"), dict) and r["result"].get("lease"):
            try:
                self.send("release", {"lease": r["result"]["lease"]})
            except errors.GovernorError:
                pass

    def register(self, lease_id: str, lease: Any) -> None:
        with self._lock:
            self._leases[lease_id] = lease
            dead = self.dead
        if dead is not None:
            lease._lose("the governor bridge is gone: " + dead)

    def unregister(self, lease_id: str) -> None:
        with self._lock:
            self._leases.pop(lease_id, None)

    # -- the reader -----------------------------------------------------

    def _read(self) -> None:
        why = "it exited"
        try:
            for raw in self._in:
                try:
                    msg = json.loads(raw)
                except ValueError:
                    continue
                if "event" in msg:
                    self._event(msg)
                    continue
                with self._lock:
                    p = self._pending.pop(msg.get("id", 0), None)
                if p is None:
                    continue
                p.reply = msg
                p.done.set()
                if p.callback is not None:
                    p.callback(msg)
        except (OSError, ValueError) as e:
            why = "reading from it failed: %s" % e
        self._gone(why)

    def _event(self, msg: Dict[str, Any]) -> None:
        if msg.get("event") == "lost":
            with self._lock:
                lease = self._leases.pop(msg.get("lease", ""), None)
            if lease is not None:
                lease._lose(msg.get("reason", "lost"))
            return
        rid = msg.get("request")
        with self._lock:
            p = self._pending.get(rid) if rid is not None else None
        if p is not None and p.on_event is not None:
            try:
                p.on_event(msg)
            except Exception:  # an event callback never stops the reader
                pass

    def _gone(self, why: str) -> None:
        """The bridge is gone: every lease is lost, every request fails."""
        with self._lock:
            if self.dead is not None:
                return
            self.dead = why
            pending, self._pending = self._pending, {}
            leases, self._leases = self._leases, {}
        for lease in leases.values():
            lease._lose("the governor bridge is gone: " + why)
        gone = {"ok": False, "error": {"code": 122, "kind": "lost", "message": "the governor bridge is gone: " + why}}
        for p in pending.values():
            p.reply = gone
            p.done.set()
            if p.callback is not None:
                p.callback(gone)

    def close(self) -> None:
        """Says bye: the bridge releases everything and exits."""
        if os.getpid() != self.pid_owner:
            return
        try:
            with self._wlock:
                self._out.close()
        except OSError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(10)
        try:
            self._in.close()
        except OSError:
            pass
        with _bridges_lock:
            if self in _bridges:
                _bridges.remove(self)

    def _forked(self) -> None:
        """In a forked child: this bridge is the parent's. Its pipes are
        closed here (the parent's stay open), and its leases are not this
        process's."""
        self.dead = "it belongs to the parent process (this is a forked child)"
        self._pending, self._leases = {}, {}
        # The file objects are not closed: their locks may be held by the
        # parent's threads, which do not exist here, so closing them could
        # hang. Their descriptors are closed, and the objects are kept
        # forever, so that no finalizer closes a reused descriptor.
        for f in (self._out, self._in):
            try:
                os.close(f.fileno())
            except (OSError, ValueError):
                pass
        _orphans.append((self._out, self._in, self.proc))


def result_of(reply: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """The result of a reply, or its error raised."""
    if reply is None:
        raise errors.BackendError("no reply from the governor bridge")
    if reply.get("ok"):
        return reply.get("result") or {}
    raise errors.from_wire(reply.get("error") or {})


def _after_fork_in_child() -> None:
    with _bridges_lock:
        old = list(_bridges)
        _bridges.clear()
    for b in old:
        b._forked()
    from . import _api
    _api._forget_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def bridge_argv(binary: str, *, dir: Optional[str] = None, config: Optional[str] = None,
                project: Optional[str] = None, backend: Optional[str] = None,
                redis_url_file: Optional[str] = None) -> List[str]:
    argv = [binary, "bridge"]
    for flag, v in (("--dir", dir), ("--config", config), ("--project", project),
                    ("--backend", backend), ("--redis-url-file", redis_url_file)):
        if v:
            argv += [flag, str(v)]
    return argv

