"""Governor, Lease, slot/aslot, the decorator, providers and slots()."""

from __future__ import annotations

import _thread
import asyncio
import dataclasses
import datetime
import functools
import inspect
import json
import os
import socket
import sys
import threading
import time
import uuid
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from . import errors
from ._bridge import Bridge, bridge_argv, find_binary, result_of

_NEST_VARS = ("GOVERNOR_HELD", "GOVERNOR_TOKEN", "HEAVY_LOCK_HELD")
_governors: "weakref.WeakSet[Governor]" = weakref.WeakSet()


def _forget_after_fork() -> None:
    for g in list(_governors):
        g._bridge_obj = None
        g._lock = threading.Lock()


class RateLimited(Exception):
    """Raise it (or an exception with ``status``/``status_code`` 429 and
    ``headers``) from a provider call: the provider cools off for every
    process."""

    def __init__(self, message: str = "rate limited", *, retry_after: Optional[float] = None,
                 status: int = 429, headers: Optional[Dict[str, str]] = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status
        self.headers = headers or {}


class Lease:
    """What one acquire holds: ``token`` (the fencing token of its first
    resource), ``handle`` (RESOURCE@ID.SECRET), ``tokens``/``handles`` per
    resource, ``lost`` (a threading.Event set when it is lost),
    ``lost_reason``, ``env`` (what a child needs to nest inside it),
    ``waited`` (seconds), ``nested`` (resources an ancestor holds)."""

    def __init__(self, gov: "Governor", bridge: Bridge, result: Dict[str, Any]) -> None:
        self._gov, self._bridge = gov, bridge
        self.id: str = result["lease"]
        self.resources: List[Dict[str, Any]] = result.get("resources") or []
        self.nested: List[str] = result.get("nested") or []
        self.env: Dict[str, str] = dict(result.get("env") or {})
        self.waited: float = float(result.get("waited") or 0.0)
        self.notes: List[str] = result.get("notes") or []
        self._record: Optional[Dict[str, Any]] = result.get("record")  # asked for by record=PATH
        self.tokens: Dict[str, int] = {r["resource"]: r["token"] for r in self.resources}
        self.handles: Dict[str, str] = {r["resource"]: r["handle"] for r in self.resources}
        self.lost = threading.Event()
        self.lost_reason = ""
        self.released = False
        self._on_lost: List[Callable[[], None]] = []
        self._mu = threading.Lock()
        bridge.register(self.id, self)

    @property
    def token(self) -> int:
        own = [r for r in self.resources if not r.get("nested")] or self.resources
        return own[0]["token"] if own else 0

    @property
    def handle(self) -> str:
        own = [r for r in self.resources if not r.get("nested")] or self.resources
        return own[0]["handle"] if own else ""

    def _lose(self, reason: str) -> List[Callable[[], None]]:
        """Marks the lease lost; returns the callbacks to run (the bridge
        runs them: Bridge.run_callbacks), none when it was lost already."""
        with self._mu:
            if self.lost.is_set() or self.released:
                return []
            self.lost_reason = reason
            self.lost.set()
            return list(self._on_lost)

    def on_lost(self, cb: Callable[[], None]) -> None:
        """Calls cb once the lease is lost (from the thread that read the
        loss, never while a caller reads the bridge's output)."""
        with self._mu:
            self._on_lost.append(cb)
            lost = self.lost.is_set()
        if lost:
            cb()

    def check(self) -> None:
        """Raises LeaseLost once the lease is lost: call it before a
        protected write."""
        if self.lost.is_set():
            raise errors.LeaseLost("lease %s lost: %s" % (self.id, self.lost_reason))

    def touch(self) -> None:
        """Marks progress (``governor touch``) for ``progress_timeout``."""
        self._bridge.call("touch", {"lease": self.id})

    def seq_next(self, name: str, resource: Optional[str] = None) -> int:
        """The next number of fenced sequence ``name``, fenced by this
        lease's token: refused (Busy) once the lease was taken over."""
        args: Dict[str, Any] = {"lease": self.id, "name": name}
        if resource:
            args["resource"] = resource
        return int(self._bridge.call("seq_next", args)["number"])

    def release(self) -> None:
        """Releases every resource of the lease; LeaseLost if it was lost."""
        with self._mu:
            if self.released:
                return
            self.released = True
        self._bridge.unregister(self.id)
        if self._bridge.dead is not None:
            if self.lost.is_set():
                raise errors.LeaseLost("lease %s lost: %s" % (self.id, self.lost_reason))
            return
        try:
            self._bridge.call("release", {"lease": self.id})
        except errors.LeaseLost:
            if not self.lost.is_set():
                self.lost_reason = "lost"
                self.lost.set()
            raise

    async def arelease(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.release)

    def __repr__(self) -> str:
        return "<governor.Lease %s %s token=%s%s>" % (self.id, ",".join(self.tokens), self.token,
                                                      " lost" if self.lost.is_set() else "")


def _seconds(v: Union[None, int, float, datetime.timedelta]) -> Optional[float]:
    if v is None:
        return None
    if isinstance(v, datetime.timedelta):
        return v.total_seconds()
    return float(v)


_OPTS = {"limit", "weight", "exclusive", "wait", "if_busy", "timeout", "ttl", "progress_timeout", "priority",
         "fair_key", "supersede", "cancel_in_progress", "tokens", "shareable", "join", "providers"}


def _acquire_args(resources: Sequence[str], opts: Dict[str, Any]) -> Dict[str, Any]:
    bad = sorted(set(opts) - _OPTS)
    if bad:
        raise TypeError("unknown option %s; allowed: %s" % (", ".join(bad), ", ".join(sorted(_OPTS))))
    args: Dict[str, Any] = {"resources": list(resources)}
    if opts.get("providers"):
        args["providers"] = list(opts["providers"])
    for k in ("limit", "weight", "tokens", "priority", "fair_key", "supersede"):
        if opts.get(k) is not None:
            args[k] = opts[k]
    for k in ("exclusive", "shareable", "join", "cancel_in_progress"):
        if opts.get(k):
            args[k] = True
    for k in ("ttl", "progress_timeout"):
        if opts.get(k) is not None:
            args[k] = _seconds(opts[k])
    if_busy = opts.get("if_busy")
    timeout = _seconds(opts.get("timeout"))
    if if_busy is None:
        if_busy = "wait" if (opts.get("wait") or timeout) else "fail"
    args["if_busy"] = if_busy
    if timeout:
        args["wait_timeout"] = timeout
    env = {k: v for k in _NEST_VARS for v in (os.getenv(k),) if v}
    if env:
        args["env"] = env
    return args


class _Record:
    """The wait record of ``record=PATH``: the same grant and end lines as
    ``governor run --record``."""

    def __init__(self, path: str, gov: "Governor", resources: Sequence[str]) -> None:
        self.path, self.gov = path, gov
        self.base: Dict[str, Any] = {
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

    def granted(self, lease: Lease) -> None:
        b = self.base
        b["wait_seconds"] = time.monotonic() - self.t0
        hello = self.gov._bridge().hello
        b["project"], b["session"] = hello.get("project", ""), hello.get("session", "")
        rec = lease._record or {}
        b["resources"], b["nested"] = rec.get("resources", b["resources"]), bool(rec.get("nested"))
        if b["nested"]:
            b["wait_seconds"] = 0.0
        self.granted_at = _now()
        self._write(dict(b, kind="grant", start=self.start, granted=self.granted_at))

    def end(self, outcome: str, exit_code: int) -> None:
        rec = dict(self.base, kind="end", start=self.start, outcome=outcome, exit_code=exit_code, end=_now())
        if getattr(self, "granted_at", None):
            rec["granted"] = self.granted_at
        else:
            rec["wait_seconds"] = time.monotonic() - self.t0
        self._write(rec)

    def _write(self, rec: Dict[str, Any]) -> None:
        line = (json.dumps(rec, separators=(",", ":")) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0), 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _outcome(exc: Optional[BaseException]) -> "tuple[str, int]":
    if exc is None:
        return "ran", 0
    if isinstance(exc, errors.GovernorError):
        return {"busy": "busy", "withdrawn": "busy", "skipped": "skipped", "superseded": "superseded",
                "lost": "lease_lost"}.get(exc.kind, "error"), exc.code
    if isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError)):
        return "interrupted", 130
    return "ran", 1


class _Slot:
    """``with gov.slot(...) as lease:`` and ``async with gov.aslot(...)``."""

    def __init__(self, gov: "Governor", resources: Sequence[str], opts: Dict[str, Any]) -> None:
        self.gov = gov
        self.resources = list(resources)
        self.record_path = opts.pop("record", None)
        self.stop_on_lost = opts.pop("stop_on_lost", True)
        self.args = _acquire_args(self.resources, opts)
        if self.record_path:
            self.args["record"] = True  # the bridge builds the record's resources, as governor run --record
        self.lease: Optional[Lease] = None
        self.record: Optional[_Record] = None
        self._interrupted = False
        self._task: Optional[asyncio.Task] = None

    # sync
    def __enter__(self) -> Lease:
        if self.record_path:
            self.record = _Record(self.record_path, self.gov, self.resources)
        try:
            self.lease = self.gov._acquire(self.args)
        except BaseException as e:
            self._end(e)
            raise
        if self.record:
            self.record.granted(self.lease)
        if self.stop_on_lost and threading.current_thread() is threading.main_thread():
            self.lease.on_lost(self._interrupt)
        return self.lease

    def _interrupt(self) -> None:
        if self.lease is not None and not self.lease.released:
            self._interrupted = True
            _thread.interrupt_main()

    def __exit__(self, et: Any, exc: Optional[BaseException], tb: Any) -> bool:
        try:
            return self._exit(exc)
        except KeyboardInterrupt:
            if self._interrupted:  # the loss's interrupt, arriving late
                raise self._lost_error() from None
            raise

    def _exit(self, exc: Optional[BaseException]) -> bool:
        lease = self.lease
        assert lease is not None
        lost_in_body = lease.lost.is_set()
        try:
            lease.release()
        except errors.LeaseLost:
            lost_in_body = True
        if lost_in_body and (exc is None or isinstance(exc, KeyboardInterrupt) and self._interrupted):
            err = self._lost_error()
            self._end(err)
            raise err from exc
        self._end(exc)
        return False

    def _lost_error(self) -> errors.LeaseLost:
        lease = self.lease
        reason = lease.lost_reason if lease else "lost"
        return errors.LeaseLost("lease %s (%s) lost while the body ran: %s" % (
            lease.id if lease else "?", ",".join(self.resources), reason))

    def _end(self, exc: Optional[BaseException]) -> None:
        if self.record:
            self.record.end(*_outcome(exc))

    # async
    async def __aenter__(self) -> Lease:
        if self.record_path:
            self.record = _Record(self.record_path, self.gov, self.resources)
        try:
            self.lease = await self.gov._aacquire(self.args)
        except BaseException as e:
            self._end(e)
            raise
        if self.record:
            self.record.granted(self.lease)
        if self.stop_on_lost:
            loop = asyncio.get_running_loop()
            self._task = asyncio.current_task()
            task = self._task

            def cancel() -> None:
                self._interrupted = True
                if task is not None:
                    loop.call_soon_threadsafe(task.cancel)
            self.lease.on_lost(cancel)
        return self.lease

    async def __aexit__(self, et: Any, exc: Optional[BaseException], tb: Any) -> bool:
        lease = self.lease
        assert lease is not None
        lost = lease.lost.is_set()
        try:
            await lease.arelease()
        except errors.LeaseLost:
            lost = True
        if lost and (exc is None or isinstance(exc, asyncio.CancelledError) and self._interrupted):
            if self._task is not None and hasattr(self._task, "uncancel") and isinstance(exc, asyncio.CancelledError):
                self._task.uncancel()
            err = self._lost_error()
            self._end(err)
            raise err from exc
        self._end(exc)
        return False


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
    holders: List[Holder]
    waiters: List[Waiter]


def _dc(cls: Any, d: Dict[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in d.items() if k in names})


class Provider:
    """A provider gate: ``call(fn)`` / ``acall(fn)`` run fn under the
    provider's gate slot and rate budget, sharing cool-offs and adaptive
    limits with every other process."""

    def __init__(self, gov: "Governor", name: str, wait: bool = True, timeout: Optional[float] = None) -> None:
        self.gov, self.name, self.wait, self.timeout = gov, name, wait, timeout

    def _args(self, tokens: Optional[int]) -> Dict[str, Any]:
        a: Dict[str, Any] = {"provider": self.name, "if_busy": "wait" if self.wait else "fail"}
        if tokens:
            a["tokens"] = tokens
        if self.timeout:
            a["wait_timeout"] = self.timeout
        return a

    def _report(self, lease: Lease, exc: Optional[BaseException]) -> None:
        args: Dict[str, Any] = {"lease": lease.id, "outcome": "ok"}
        status = getattr(exc, "status", None) or getattr(exc, "status_code", None) if exc is not None else None
        if exc is not None and (isinstance(exc, RateLimited) or status in (429, 529)):
            args.update(outcome="rate_limited", status=int(status or 429))
            headers = getattr(exc, "headers", None)
            if headers:
                args["headers"] = {str(k): str(v) for k, v in dict(headers).items()}
            ra = getattr(exc, "retry_after", None)
            if ra:
                args["retry_after"] = float(ra)
        elif exc is not None:
            return
        self.gov._bridge().call("provider_report", args)

    def call(self, fn: Callable[..., Any], *a: Any, tokens: Optional[int] = None, **kw: Any) -> Any:
        lease = self.gov._call_lease("provider_acquire", self._args(tokens))
        try:
            out = fn(*a, **kw)
        except BaseException as e:
            self._report(lease, e)
            raise
        else:
            self._report(lease, None)
            return out
        finally:
            lease.release()

    async def acall(self, fn: Callable[..., Any], *a: Any, tokens: Optional[int] = None, **kw: Any) -> Any:
        lease = await self.gov._acall_lease("provider_acquire", self._args(tokens))
        try:
            out = fn(*a, **kw)
            if inspect.isawaitable(out):
                out = await out
        except BaseException as e:
            await asyncio.get_running_loop().run_in_executor(None, self._report, lease, e)
            raise
        else:
            await asyncio.get_running_loop().run_in_executor(None, self._report, lease, None)
            return out
        finally:
            await lease.arelease()


class Governor:
    """A governor configuration: ``dir=`` (file backend), ``redis_url=``
    (passed to the bridge in its environment, never on its command line),
    ``redis_url_file=``, ``project=``, ``config=``, ``backend=``,
    ``session=``, ``binary=``. One bridge per Governor and process, started
    on first use; a forked child starts its own."""

    def __init__(self, *, dir: Optional[str] = None, redis_url: Optional[str] = None,
                 redis_url_file: Optional[str] = None, project: Optional[str] = None,
                 config: Optional[str] = None, backend: Optional[str] = None,
                 session: Optional[str] = None, binary: Optional[str] = None) -> None:
        self._cfg = dict(dir=dir, config=config, project=project, backend=backend, redis_url_file=redis_url_file)
        self._redis_url = redis_url
        self._session = session or ""
        self._binary = binary
        self._lock = threading.Lock()
        self._bridge_obj: Optional[Bridge] = None
        _governors.add(self)

    def _bridge(self) -> Bridge:
        with self._lock:
            b = self._bridge_obj
            if b is None or b.dead is not None or b.pid_owner != os.getpid():  # a forked child starts its own
                env = dict(os.environ)
                if self._redis_url:
                    env["GOVERNOR_REDIS_URL"] = self._redis_url
                b = Bridge(bridge_argv(self._binary or find_binary(), **self._cfg), env, self._session)
                self._bridge_obj = b
            return b

    @property
    def bridge_pid(self) -> int:
        return int(self._bridge().hello["pid"])

    def close(self) -> None:
        """Ends the bridge: it releases everything this process holds."""
        with self._lock:
            b, self._bridge_obj = self._bridge_obj, None
        if b is not None:
            b.close()

    def __enter__(self) -> "Governor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # leases
    def _call_lease(self, op: str, args: Dict[str, Any]) -> Lease:
        b = self._bridge()
        return Lease(self, b, b.call(op, args))

    async def _acall_lease(self, op: str, args: Dict[str, Any]) -> Lease:
        b = self._bridge()
        loop = asyncio.get_running_loop()
        fut = loop.create_future()

        def done(reply: Dict[str, Any]) -> None:
            loop.call_soon_threadsafe(lambda: fut.done() or fut.set_result(reply))
        rid, p = b.send(op, args, callback=done)
        try:
            reply = await asyncio.shield(fut)
        except asyncio.CancelledError:
            await loop.run_in_executor(None, b.cancel, rid, p)
            raise
        return Lease(self, b, result_of(reply))

    def _acquire(self, args: Dict[str, Any]) -> Lease:
        return self._call_lease("acquire", args)

    async def _aacquire(self, args: Dict[str, Any]) -> Lease:
        return await self._acall_lease("acquire", args)

    def acquire(self, *resources: str, **opts: Any) -> Lease:
        """Takes resources (CLI options as keywords); release the Lease."""
        return self._acquire(_acquire_args(resources, opts))

    async def aacquire(self, *resources: str, **opts: Any) -> Lease:
        return await self._aacquire(_acquire_args(resources, opts))

    def slot(self, *resources: str, **opts: Any) -> _Slot:
        """``with gov.slot("heavy", wait=True) as lease:``. Options: limit,
        weight, exclusive, wait, if_busy, timeout, ttl, progress_timeout,
        priority, fair_key, supersede, cancel_in_progress, tokens,
        shareable, join, providers, record (a wait-record JSONL path),
        stop_on_lost (default True: a loss interrupts the body in the main
        thread, raised as LeaseLost)."""
        return _Slot(self, resources, opts)

    aslot = slot  # the same object is an async context manager

    def governed(self, *resources: str, **opts: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """A decorator: each call of the (sync or async) function runs in
        ``slot(*resources, **opts)``."""
        def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
            if inspect.iscoroutinefunction(fn):
                @functools.wraps(fn)
                async def awrapper(*a: Any, **kw: Any) -> Any:
                    async with self.slot(*resources, **dict(opts)):
                        return await fn(*a, **kw)
                return awrapper

            @functools.wraps(fn)
            def wrapper(*a: Any, **kw: Any) -> Any:
                with self.slot(*resources, **dict(opts)):
                    return fn(*a, **kw)
            return wrapper
        return wrap

    def takeover(self, resource: Optional[str] = None, *, lease_id: Optional[str] = None,
                 session: Optional[str] = None, force: bool = False, ttl: Optional[float] = None,
                 limit: Optional[int] = None) -> Lease:
        """``governor takeover``: the new lease is held here, with heartbeats."""
        args: Dict[str, Any] = {"force": force}
        for k, v in (("resource", resource), ("lease_id", lease_id), ("session", session), ("limit", limit)):
            if v:
                args[k] = v
        if ttl:
            args["ttl"] = _seconds(ttl)
        return self._call_lease("takeover", args)

    def provider(self, name: str, *, wait: bool = True, timeout: Optional[float] = None) -> Provider:
        return Provider(self, name, wait, timeout)

    def backoff(self, provider: str, retry_after: Optional[float] = None) -> str:
        args: Dict[str, Any] = {"provider": provider}
        if retry_after:
            args["retry_after"] = float(retry_after)
        return self._bridge().call("backoff", args)["until"]

    def slots(self, *resources: str) -> List[Resource]:
        r = self._bridge().call("slots", {"resources": list(resources)} if resources else {})
        return [Resource(resource=x["resource"], limit=x["limit"], used=x["used"], free=x["free"],
                         holders=[_dc(Holder, h) for h in x.get("holders") or []],
                         waiters=[_dc(Waiter, w) for w in x.get("waiters") or []])
                for x in r.get("resources") or []]

    def events(self, *resources: str, since: Optional[float] = None) -> List[Dict[str, Any]]:
        args: Dict[str, Any] = {"resources": list(resources)}
        if since:
            args["since"] = float(since)
        return self._bridge().call("events", args)["events"]

    def cancel(self, resource: str, *, waiter: str = "", session: str = "") -> int:
        return int(self._bridge().call("cancel", {"resource": resource, "waiter": waiter, "session": session})["cancelled"])

    def pause(self, resource: str) -> None:
        self._bridge().call("pause", {"resource": resource})

    def resume(self, resource: str) -> None:
        self._bridge().call("resume", {"resource": resource})

    def limit(self, resource: str, limit: Optional[int] = None) -> None:
        """Sets a live limit; None clears it."""
        self._bridge().call("limit", {"resource": resource, "limit": limit} if limit else {"resource": resource, "clear": True})


_default: Optional[Governor] = None
_default_lock = threading.Lock()


def default() -> Governor:
    """The process's Governor of the ambient configuration (GOVERNOR_*)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Governor()
        return _default
