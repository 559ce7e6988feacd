"""Governor, slot/aslot and the decorator (Lease: _lease).

Only what a synchronous slot needs is imported here; asyncio on the first
async call, and providers (_provider), wait records (_record) and
``slots()``'s dataclasses (_admin) on first use."""

from __future__ import annotations

import _thread
import _weakref
import os
import sys

from . import errors
from ._bridge import Bridge, find_binary, nest_env, result_of
from ._lease import Lease
from ._wire import amount

TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio
    import datetime
    from typing import Any, Callable, Dict, List, Optional, Sequence, Union

    from ._admin import Resource
    from ._provider import Provider
    from ._record import Record

_governors: "Dict[int, Any]" = {}  # id -> weak reference, for fork
_MAIN = _thread.get_ident()  # the importing thread: the main one, unless threading says otherwise


def bridge_argv(binary: str, *, dir: "Optional[str]" = None, config: "Optional[str]" = None,
                project: "Optional[str]" = None, backend: "Optional[str]" = None,
                redis_url_file: "Optional[str]" = None) -> "List[str]":
    argv = [binary, "bridge"]
    for flag, v in (("--dir", dir), ("--config", config), ("--project", project),
                    ("--backend", backend), ("--redis-url-file", redis_url_file)):
        if v:
            argv += [flag, str(v)]
    return argv


def _track(g: "Governor") -> None:
    k = id(g)
    _governors[k] = _weakref.ref(g, lambda _, k=k: _governors.pop(k, None))


def _forget_after_fork() -> None:
    for ref in list(_governors.values()):
        g = ref()
        if g is not None:
            g._bridge_obj = None
            g._lock = _thread.allocate_lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def _in_main_thread() -> bool:
    threading = sys.modules.get("threading")
    if threading is not None:
        return threading.current_thread() is threading.main_thread()
    return _thread.get_ident() == _MAIN  # no threading: no thread but ours and _thread's


def _interrupt_main(main: int) -> None:
    """Raises KeyboardInterrupt in the main thread (ident main), as Ctrl-C
    would: through Python's SIGINT handler when it is Python's own
    (interrupt_main runs it), else into the thread itself. A process
    whose SIGINT is ignored (started with ``&`` by a script, which
    ignores it for its background jobs) or handled by a handler of its
    own would otherwise go on with the body: interrupt_main does nothing
    when SIGINT is ignored, and runs the caller's handler, which need
    not raise."""
    import signal
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        _thread.interrupt_main()
        return
    import ctypes
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(main), ctypes.py_object(KeyboardInterrupt))


def _seconds(v: "Union[None, int, float, datetime.timedelta]") -> "Optional[float]":
    if v is None:
        return None
    if hasattr(v, "total_seconds"):  # a datetime.timedelta (datetime is not imported for it)
        return float(v.total_seconds())
    return float(v)


_PLAIN = frozenset(("limit", "weight", "tokens", "priority", "fair_key", "supersede"))
_FLAGS = frozenset(("exclusive", "shareable", "join", "cancel_in_progress"))
_DURATIONS = frozenset(("ttl", "progress_timeout"))
_OPTS = _PLAIN | _FLAGS | _DURATIONS | {"wait", "if_busy", "timeout", "providers", "budgets", "estimate"}


def _acquire_args(resources: "Sequence[str]", opts: "Dict[str, Any]") -> "Dict[str, Any]":
    if not _OPTS.issuperset(opts):
        bad = sorted(set(opts) - _OPTS)
        raise TypeError("unknown option %s; allowed: %s" % (", ".join(bad), ", ".join(sorted(_OPTS))))
    args: "Dict[str, Any]" = {"resources": list(resources)}
    timeout = None
    wait = if_busy = None
    for k, v in opts.items():
        if k in _PLAIN:
            if v is not None:
                args[k] = v
        elif k in _FLAGS:
            if v:
                args[k] = True
        elif k in _DURATIONS:
            if v is not None:
                args[k] = _seconds(v)
        elif k == "timeout":
            timeout = _seconds(v)
        elif k == "wait":
            wait = v
        elif k == "if_busy":
            if_busy = v
        elif k == "budgets":
            if v:
                from ._budget import budgets_wire
                args[k] = budgets_wire(v)
        elif k == "estimate":
            if v is not None:
                args[k] = amount(v)
        elif v:  # providers
            args[k] = list(v)
    if if_busy is None:
        if_busy = "wait" if (wait or timeout) else "fail"
    args["if_busy"] = if_busy
    if timeout:
        args["wait_timeout"] = timeout
    env = nest_env()
    if env:
        args["env"] = env
    return args


class _Slot:
    """``with gov.slot(...) as lease:`` and ``async with gov.aslot(...)``."""

    def __init__(self, gov: "Governor", resources: "Sequence[str]", opts: "Dict[str, Any]") -> None:
        self.gov = gov
        self.resources = list(resources)
        self.record_path = opts.pop("record", None)
        self.stop_on_lost = opts.pop("stop_on_lost", True)
        self.args = _acquire_args(self.resources, opts)
        if self.record_path:
            self.args["record"] = True  # the bridge builds the record's resources, as governor run --record
        self.lease: "Optional[Lease]" = None
        self.record: "Optional[Record]" = None
        self._interrupted = False
        self._main = 0  # the main thread's ident, when a loss interrupts it
        self._task: "Optional[asyncio.Task[Any]]" = None

    def _start_record(self) -> None:
        if self.record_path:
            from ._record import Record
            self.record = Record(self.record_path, self.gov, self.resources)

    def _not_held(self) -> None:
        """A slot object holds one lease at a time: entered again while it
        holds one (two threads or tasks sharing it), it would lose the
        first lease's handle and release the wrong one. Refused; each
        ``gov.slot(...)`` call (and each call of a ``governed`` function)
        is a slot of its own."""
        if self.lease is not None and not self.lease.released:
            raise RuntimeError("slot %s already holds lease %s: one slot object holds one lease at a time; "
                               "call gov.slot(...) again for another" % (",".join(self.resources), self.lease.id))

    # sync
    def __enter__(self) -> Lease:
        self._not_held()
        self._start_record()  # a record= it cannot append to is refused here, nothing asked for yet
        try:
            self.lease = self.gov._acquire(self.args)
        except BaseException as e:
            self._end(e)
            raise
        if self.record:
            try:
                self.record.granted(self.lease)
            except BaseException:
                self._abandon()
                try:
                    self.lease.release()
                except errors.GovernorError:
                    pass  # the grant line's error is the one to tell
                raise
        if self.stop_on_lost and _in_main_thread():
            self._main = _thread.get_ident()
            self.lease.on_lost(self._interrupt)
        return self.lease

    def _interrupt(self) -> None:
        if self.lease is not None and not self.lease.released:
            self._interrupted = True
            _interrupt_main(self._main)

    def __exit__(self, et: "Any", exc: "Optional[BaseException]", tb: "Any") -> bool:
        try:
            return self._exit(exc)
        except KeyboardInterrupt:
            if self._interrupted:  # the loss's interrupt, arriving late
                raise self._lost_error() from None
            raise

    def _exit(self, exc: "Optional[BaseException]") -> bool:
        lease = self.lease
        assert lease is not None
        lost_in_body = lease._lost
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

    def _end(self, exc: "Optional[BaseException]") -> None:
        """Writes the end line. When exc (the acquire's or the body's error)
        is on its way, a failing write does not replace it: it is noted on it."""
        if not self.record:
            return
        try:
            self.record.end(exc)
        except OSError as e:
            if exc is None:
                raise
            note = getattr(exc, "add_note", None)  # Python >= 3.11
            if note is not None:
                note("and the end line of record %s could not be written: %s" % (self.record.path, e))

    def _abandon(self) -> None:
        """The grant line failed: no end line follows it."""
        if self.record:
            self.record.close()

    # async
    async def __aenter__(self) -> Lease:
        import asyncio
        self._not_held()
        self._start_record()
        try:
            self.lease = await self.gov._aacquire(self.args)
        except BaseException as e:
            self._end(e)
            raise
        if self.record:
            try:
                self.record.granted(self.lease)
            except BaseException:
                self._abandon()
                try:
                    await self.lease.arelease()
                except errors.GovernorError:
                    pass  # the grant line's error is the one to tell
                raise
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

    async def __aexit__(self, et: "Any", exc: "Optional[BaseException]", tb: "Any") -> bool:
        import asyncio
        lease = self.lease
        assert lease is not None
        lost = lease._lost
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
        self._lock = _thread.allocate_lock()
        self._bridge_obj: "Optional[Bridge]" = None
        _track(self)

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

    @property
    def engine_version(self) -> str:
        """The version of the governor binary the bridge runs ("0.1.0"), from
        its hello (starts the bridge); ``governor.__version__`` is the client's."""
        return str(self._bridge().hello.get("version", ""))

    @property
    def engine_commit(self) -> str:
        """The commit the governor binary was built from ("" when unknown)."""
        return str(self._bridge().hello.get("commit", ""))

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

    @staticmethod
    async def _acall(b: Bridge, op: str, args: "Dict[str, Any]") -> "Dict[str, Any]":
        """A request from asyncio: its reply, read by the reader thread (or
        a synchronous caller), resolves a future of the running loop. A
        cancelled task cancels the request (cancel_request) and ends once
        the request has (30 s at most, as a sync call; no executor thread):
        a lease it got anyway is released when its reply is read."""
        import asyncio
        loop = asyncio.get_running_loop()
        fut = loop.create_future()

        def settle(reply: "Dict[str, Any]") -> None:
            if not fut.done():
                fut.set_result(reply)

        def done(reply: "Dict[str, Any]") -> None:
            loop.call_soon_threadsafe(settle, reply)
        p = b.send(op, args, callback=done)
        try:
            reply = await fut
        except asyncio.CancelledError:
            gone = loop.create_future()

            def settle_gone() -> None:
                if not gone.done():
                    gone.set_result(None)

            def ended(_: "Dict[str, Any]") -> None:
                loop.call_soon_threadsafe(settle_gone)
            b.cancel(p, wait=False, then=ended)
            try:
                await asyncio.wait_for(gone, 30)
            except asyncio.TimeoutError:
                pass
            raise
        return result_of(reply)

    async def _acall_lease(self, op: str, args: "Dict[str, Any]") -> Lease:
        b = self._bridge()
        return Lease(self, b, await self._acall(b, op, args))

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
        shareable, join, providers, budgets (governor.Budget, or the name
        of a configured budget; reserved with the slot) and estimate (the work's upper-bound cost; settle
        the actual with ``lease.settle(cost)``), record (a wait-record JSONL path),
        stop_on_lost (default True: a loss interrupts the body in the main
        thread, raised as LeaseLost)."""
        return _Slot(self, resources, opts)

    aslot = slot  # the same object is an async context manager

    def governed(self, *resources: str, **opts: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """A decorator: each call of the (sync or async) function runs in
        ``slot(*resources, **opts)``."""
        import functools
        import inspect

        def wrap(fn: "Callable[..., Any]") -> "Callable[..., Any]":
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

    def provider(self, name: str, *, wait: bool = True, timeout: Optional[float] = None,
                 budgets: "Optional[Sequence[Any]]" = None, price: "Optional[Any]" = None) -> Provider:
        """The gate of provider name; with ``budgets`` (governor.Budget,
        or a configured budget's name) each call reserves its estimate and settles its cost (see
        Provider.call)."""
        from ._provider import Provider
        return Provider(self, name, wait, timeout, budgets, price)

    def backoff(self, provider: str, retry_after: Optional[float] = None) -> str:
        args: Dict[str, Any] = {"provider": provider}
        if retry_after:
            args["retry_after"] = float(retry_after)
        return self._bridge().call("backoff", args)["until"]

    def slots(self, *resources: str) -> List[Resource]:
        r = self._bridge().call("slots", {"resources": list(resources)} if resources else {})
        from ._admin import resources
        return resources(r)

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
_default_lock = _thread.allocate_lock()


def default() -> Governor:
    """The process's Governor of the ambient configuration (GOVERNOR_*)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Governor()
        return _default
