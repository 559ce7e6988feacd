"""The co-process: one ``governor bridge`` per Governor configuration and
process, spoken to in newline-delimited JSON (docs/bridge-protocol.md).

It imports only what a synchronous slot needs (no threading, json,
subprocess or asyncio: ``import governor`` and a cold script's first slot
stay within milliseconds); the rest of the package imports this module,
never the other way round (tests/test_imports.py)."""

from __future__ import annotations

import _thread
import os
import select
import time

from . import errors
from ._version import __version__
from ._proc import Child
from ._wire import decode as _decode
from ._wire import request as _request

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

PROTOCOL = 1
CLIENT = "python/" + __version__

_bridges: "List[Bridge]" = []  # every live bridge of this process, for fork
_bridges_lock = _thread.allocate_lock()


_NEST_VARS = ("GOVERNOR_HELD", "GOVERNOR_TOKEN", "HEAVY_LOCK_HELD")
_NEST_KEYS = tuple((k, k.encode()) for k in _NEST_VARS)


def nest_env() -> "Dict[str, str]":
    """The nesting variables set in os.environ now: what an enclosing
    governor run holds, sent as env by acquire and provider_acquire
    (read from its bytes mapping where it has one: a third of the time
    of os.environ.get)."""
    data = getattr(os.environ, "_data", None)
    if os.name == "posix" and isinstance(data, dict):
        out = {}
        for k, bk in _NEST_KEYS:
            v = data.get(bk)
            if v:
                out[k] = os.fsdecode(v)
        return out
    return {k: v for k in _NEST_VARS for v in (os.environ.get(k),) if v}


def find_binary() -> str:
    """The governor binary: $GOVERNOR_BIN, then the one shipped in the
    package (governor/_bin/governor), then ``governor`` on PATH."""
    env = os.environ.get("GOVERNOR_BIN")
    if env:
        return env
    shipped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "governor")
    if os.path.isfile(shipped) and os.access(shipped, os.X_OK):
        return shipped
    for d in os.get_exec_path():
        found = os.path.join(d, "governor")
        if os.path.isfile(found) and os.access(found, os.X_OK):
            return found
    raise errors.BackendError("governor binary not found: set GOVERNOR_BIN, install a wheel that ships it "
                              "(governor/_bin/governor), or put governor on PATH")


class _Pending:
    """A request's reply: ``reply`` once it arrived. ``_got`` is a plain
    lock, made held, released when the reply is in (no Event and its
    Condition per call). ``rid`` is its id once registered, ``sent`` true
    once its line was written; ``callback`` (if any) is called with the
    reply by whoever read it."""

    __slots__ = ("_got", "reply", "on_event", "callback", "rid", "sent")

    def __init__(self, on_event: "Optional[Callable[[Dict[str, Any]], None]]" = None,
                 callback: "Optional[Callable[[Dict[str, Any]], None]]" = None) -> None:
        self._got = _thread.allocate_lock()
        self._got.acquire()
        self.reply: "Optional[Dict[str, Any]]" = None
        self.on_event = on_event
        self.callback = callback
        self.rid = 0
        self.sent = False

    def wait(self, timeout: "Optional[float]" = None) -> bool:
        """Waits up to timeout (None: for ever) for the reply."""
        if self.reply is None:
            self._got.acquire(True, -1 if timeout is None else timeout)
        return self.reply is not None

    def set(self, reply: "Dict[str, Any]") -> None:
        """Delivers reply; delivering again changes nothing."""
        if self.reply is None:
            self.reply = reply
        _release(self._got)


# The reading of the bridge's output. Whoever holds the reading role
# (Bridge._role) reads the pipe and dispatches every line: a caller
# waiting for its reply takes it when it is free (it then wakes up for its
# own reply, with no hand-off from another thread), otherwise the reader
# thread, which watches the pipe between calls (events, EOF). A caller
# may be interrupted anywhere (KeyboardInterrupt), so reading loses
# nothing to that: bytes are read into a buffer whose unused part is zero
# (the bridge's JSON lines hold no NUL byte, so the first one ends what was
# read), a line is dispatched before it is marked read (Bridge._r, one
# store), and dispatching a line again changes nothing.
_BUF = 1 << 16

# The reader thread leaves the pipe to callers while they come one after
# another (it would wake up for every reply they read, and take the GIL
# from them): it looks again after 2 ms, twice as long each time it
# finds callers still at it, up to _NAP, and watches the pipe again once
# none has called for _QUIET, or at once when a caller stops
# reading with other requests still waiting, or one is sent that no
# caller waits for by reading (the async ones). Events and the pipe's end
# are read up to _NAP later after a burst of calls: far less than any
# lease's safety margin (the backend expires a lost lease seconds after).
_QUIET = 0.02
_NAP = 0.05


class Bridge:
    """One running ``governor bridge``. Thread-safe: any thread may send
    requests; replies and events are read by the caller that waits (one
    at a time) or a reader thread."""

    def __init__(self, argv: "List[str]", env: "Dict[str, str]", session: str = "") -> None:
        self.pid_owner = os.getpid()
        self._wlock = _thread.allocate_lock()
        self._lock = _thread.allocate_lock()
        self._next = 0
        self._pending: "Dict[int, _Pending]" = {}
        self._leases: "Dict[str, Any]" = {}  # bridge lease id -> Lease
        self.dead: "Optional[str]" = None
        self._role = _thread.allocate_lock()  # held by whoever reads the pipe
        self._leader = 0  # the thread id of a caller that reads, else 0
        self._later: "List[Callable[[], None]]" = []  # loss callbacks a caller read, run once it stops reading
        self._last = 0.0  # when a caller last stopped reading (monotonic)
        self._wake = _thread.allocate_lock()  # released to wake the reader thread up early
        self._wake.acquire()
        self._watchers = 0  # requests in flight with on_event
        self._closing = False
        self._r: "Tuple[bytearray, int]" = (bytearray(_BUF), 0)  # the buffer, and where its unread bytes start
        self._released: "set[str]" = set()  # leases of requests given up, released by _drop
        self.noreply = False  # the bridge takes releases not waited for (hello's features)
        self._quiet = False  # one was sent: close flushes them (bye)
        self._outbox = b""  # releases not waited for, written with the next request or by the reader thread
        if "GOMAXPROCS" not in env:
            # One processor from the start: the bridge would set it itself,
            # stopping its runtime to shrink it (a fifth of its start's CPU).
            env = dict(env, GOMAXPROCS="1")
        try:
            self.proc = Child(argv, env)
        except OSError as e:
            raise errors.BackendError("cannot start the governor bridge %r: %s" % (argv[0], e)) from None
        self._wfd = self.proc.stdin
        self._fd = self.proc.stdout
        os.set_blocking(self._fd, False)
        self._lpoll = select.poll()  # the callers' who read (one at a time)
        self._lpoll.register(self._fd, select.POLLIN)
        self._reader_done = _thread.allocate_lock()
        self._reader_done.acquire()
        _thread.start_new_thread(self._read, ())
        args: "Dict[str, Any]" = {"protocol": PROTOCOL, "client": CLIENT, "pid": os.getpid()}
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
        self.noreply = "noreply" in (hello.get("features") or ())
        with _bridges_lock:
            _bridges.append(self)

    # -- requests -------------------------------------------------------

    def _submit(self, p: _Pending, op: str, args: "Optional[Dict[str, Any]]") -> None:
        """Registers p (its rid set first) and writes its request."""
        with self._lock:
            if self.dead is not None:
                raise errors.LeaseLost("the governor bridge is gone: " + self.dead)
            self._next += 1
            p.rid = rid = self._next
            self._pending[rid] = p
            if p.on_event is not None:
                self._watchers += 1
        self._write(_request(rid, op, args or {}), p)

    def _write(self, data: bytes, p: "Optional[_Pending]" = None, hold: bool = False) -> None:
        """Writes a request's line (p, if given, is marked sent with it)
        after the lines held back; hold: holds it back too (one write, one
        wake-up of the bridge, for a release and the request after it)."""
        try:
            with self._wlock:
                if hold:
                    self._outbox += data
                    return
                data, self._outbox = self._outbox + data, b""
                while data:
                    data = data[os.write(self._wfd, data):]
                if p is not None:
                    p.sent = True
        except (OSError, ValueError) as e:
            self._gone("cannot write to it: %s" % e)

    def send_quiet(self, op: str, args: "Dict[str, Any]") -> None:
        """Sends a release not waited for (noreply): the bridge answers
        nothing when it succeeds, runs every later request after it, and
        refuses the next request waited for with its failure (bye, sent
        by close, carries what no request took)."""
        with self._lock:
            if self.dead is not None:
                raise errors.LeaseLost("the governor bridge is gone: " + self.dead)
            self._next += 1
            rid, self._quiet = self._next, True
        # Held back while no request waits (none waits for its slot): the
        # next request, or the reader thread within a nap (_NAP), writes it.
        self._write(_request(rid, op, args, True), hold=not self._pending)

    def send(self, op: str, args: "Optional[Dict[str, Any]]" = None,
             on_event: "Optional[Callable[[Dict[str, Any]], None]]" = None,
             callback: "Optional[Callable[[Dict[str, Any]], None]]" = None) -> _Pending:
        """Sends a request; the reply arrives in the returned pending
        (callback, if given, is called with it by whoever reads it: the
        reader thread, or a caller reading for its own reply)."""
        p = _Pending(on_event, callback)
        self._submit(p, op, args)
        if callback is not None:
            _release(self._wake)  # no caller reads for it: the reader thread does
        return p

    def call(self, op: str, args: "Optional[Dict[str, Any]]" = None,
             on_event: "Optional[Callable[[Dict[str, Any]], None]]" = None) -> "Dict[str, Any]":
        """Sends a request and waits for its reply: the result, or the
        error raised. An exception while it is sent or waited for (a
        KeyboardInterrupt) cancels the request (cancel_request) and is
        raised once it has ended; a lease it got anyway is released."""
        p = _Pending(on_event)
        try:
            if self._role.acquire(False):
                # The reader thread keeps out while a caller leads: marked
                # before the request is registered, else the reader thread,
                # finding a request in flight and no leader, would read, and
                # take replies from the callers one after another.
                self._leader = _thread.get_ident()
                try:
                    self._submit(p, op, args)
                    self._lead(p)
                finally:
                    self._leader = 0
                    self._last = time.monotonic()
                    self._role.release()
                    if self._pending:  # others wait: the reader thread reads for them
                        _release(self._wake)
                    self._run_later()
            else:
                self._submit(p, op, args)
            # In slices: a KeyboardInterrupt can land (main thread), and a
            # bridge found gone by a reader interrupted meanwhile is seen.
            while not p.wait(0.5):
                if self.dead is not None:
                    p.set(self._gone_reply(self.dead))
        except BaseException:
            self.cancel(p)
            raise
        return result_of(p.reply)

    def _lead(self, p: _Pending) -> None:
        """Reads the pipe (the role held) until p's reply is in, the
        bridge is gone, or a loss was read whose callbacks must run: they
        run once the role is released, never while this caller reads."""
        self._lines()
        while p.reply is None and self.dead is None and not self._later:
            self._lpoll.poll()
            if not self._take(once=True):
                return

    def _run_later(self) -> None:
        while self._later:
            try:
                cb = self._later.pop(0)
            except IndexError:  # another thread ran it
                return
            try:
                cb()
            except Exception:
                pass

    def run_callbacks(self, callbacks: "List[Callable[[], None]]") -> None:
        """Runs a lost lease's callbacks: at once, or, read by a caller,
        once it stops reading."""
        if not callbacks:
            return
        if self._leader == _thread.get_ident():
            self._later.extend(callbacks)
            return
        for cb in callbacks:
            try:
                cb()
            except Exception:
                pass

    def cancel(self, p: _Pending, wait: bool = True,
               then: "Optional[Callable[[Dict[str, Any]], None]]" = None) -> None:
        """Gives up request p: from now on a lease its reply carries is
        released as soon as it is read; a request in flight is cancelled
        (cancel_request). wait: until its reply is in (30 s at most);
        then, if given, is called with the reply once it is in (from the
        thread that read it; maybe twice)."""
        if not p.rid:
            return  # never registered: nothing was sent

        def ended(reply: "Dict[str, Any]") -> None:
            self._drop(reply)
            if then is not None:
                then(reply)
        p.callback = ended
        if p.reply is not None:
            ended(p.reply)
            return
        try:
            c = self.send("cancel_request", {"request": p.rid})
        except errors.GovernorError:
            return
        if wait:
            # Not known to be sent (interrupted in the write): its reply,
            # if it was, comes before the cancel's own.
            (p if p.sent else c).wait(30)
        else:
            _release(self._wake)

    def _drop(self, reply: "Dict[str, Any]") -> None:
        """The callback of a request given up: a lease it got is released."""
        r = reply.get("result") if reply.get("ok") else None
        lease = r.get("lease") if isinstance(r, dict) else None
        if not lease:
            return
        with self._lock:
            if self.dead is not None or lease in self._released:
                return
            self._released.add(lease)
        try:
            if self.noreply:  # never refused for another's failure
                self.send_quiet("release", {"lease": lease})
            else:
                self.send("release", {"lease": lease})
        except errors.GovernorError:
            pass

    def register(self, lease_id: str, lease: "Any") -> None:
        with self._lock:
            self._leases[lease_id] = lease
            dead = self.dead
        if dead is not None:
            self.run_callbacks(lease._lose("the governor bridge is gone: " + dead))

    def unregister(self, lease_id: str) -> None:
        with self._lock:
            self._leases.pop(lease_id, None)

    # -- reading --------------------------------------------------------

    def _read(self) -> None:
        """The reader thread: reads the pipe whenever it has something and
        no caller reads it, until its end."""
        try:
            poll = select.poll()
            poll.register(self._fd, select.POLLIN)
            nap = 0.002
            while self.dead is None:
                quiet = time.monotonic() - self._last
                if self._leader or quiet < _QUIET and not self._pending and not self._closing:
                    if self._wake.acquire(True, nap):
                        nap = 0.002  # woken: others wait
                    else:
                        nap = min(2 * nap, _NAP)
                    if self._outbox and not self._leader:
                        self._write(b"")
                    continue
                nap = 0.002
                if self._outbox:
                    self._write(b"")
                try:
                    poll.poll()
                except OSError:
                    pass
                with self._role:  # a caller reading: wait until it stops
                    self._lines()  # a line an interrupted caller left dispatched but unmarked
                    if not self._take(once=False):
                        return
        finally:
            self._reader_done.release()

    def _take(self, once: bool) -> bool:
        """Reads what the pipe holds (once: one read, else until it has
        no more) and dispatches every whole line, the role held. False
        once the bridge is gone (its end read: _gone)."""
        while True:
            buf, start = self._r
            end = buf.find(0, start)
            if end < 0 or len(buf) - end < 4096:
                # Full: the unread part moves to a new, zeroed buffer.
                end = len(buf) if end < 0 else end
                self._r = (bytearray(buf[start:end]) + bytearray(max(_BUF, 2 * (end - start))), 0)
                continue
            try:
                n = os.readv(self._fd, [memoryview(buf)[end:]])
            except BlockingIOError:
                return True
            except (OSError, ValueError) as e:
                self._gone("reading from it failed: %s" % e)
                return False
            if n == 0:
                self._gone("it exited")
                return False
            self._lines()
            if once and n < len(buf) - end:
                return True

    def _lines(self) -> None:
        """Dispatches the whole lines read, each before it is marked read."""
        buf, start = self._r
        while True:
            nl = buf.find(10, start)
            if nl < 0:
                return
            self._dispatch(buf[start:nl])
            self._r = (buf, nl + 1)
            start = nl + 1

    def _dispatch(self, line: bytearray) -> None:
        """One line. Its reply is delivered, then its callback called,
        then its request forgotten: dispatched again (an interrupt came
        before the line was marked read) it is delivered and called back
        again (both change nothing the second time), never lost."""
        if line.startswith(b'{"event":"') and not line.startswith(b'{"event":"lost"') and not self._watchers:
            return  # an event nobody watches (granted, queued)
        try:
            msg = _decode(line.decode())
        except ValueError:
            return
        if not isinstance(msg, dict):
            return
        if "event" in msg:
            self._event(msg)
            return
        rid = msg.get("id", 0)
        p = self._pending.get(rid)
        if p is None:
            return
        p.set(msg)
        if p.callback is not None:
            p.callback(msg)
        with self._lock:
            if self._pending.pop(rid, None) is not None and p.on_event is not None:
                self._watchers -= 1

    def _event(self, msg: "Dict[str, Any]") -> None:
        if msg.get("event") == "lost":
            lid = msg.get("lease", "")
            lease = self._leases.get(lid)
            if lease is not None:
                self.run_callbacks(lease._lose(msg.get("reason", "lost")))
                with self._lock:
                    self._leases.pop(lid, None)
            return
        rid = msg.get("request")
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
        try:
            self.proc.poll()  # reaped now if it exited (no zombie until this process ends)
        except OSError:
            pass
        for lease in leases.values():
            self.run_callbacks(lease._lose("the governor bridge is gone: " + why))
        gone = self._gone_reply(why)
        for p in pending.values():
            p.set(gone)
            if p.callback is not None:
                p.callback(gone)

    @staticmethod
    def _gone_reply(why: str) -> "Dict[str, Any]":
        return {"ok": False, "error": {"code": 122, "kind": "lost", "message": "the governor bridge is gone: " + why}}

    def close(self) -> None:
        """Ends the bridge: it releases everything and exits. After releases not waited
        for, it says bye first and raises what they owe once the bridge has ended."""
        if os.getpid() != self.pid_owner:
            return
        owed: "Optional[BaseException]" = None
        if self._quiet and self.dead is None:
            try:
                self.call("bye")
            except errors.GovernorError as e:
                owed = e
        self._end()
        if owed is not None and not (isinstance(owed, errors.LeaseLost) and "bridge is gone" in str(owed)):
            raise owed

    def _end(self) -> None:
        with self._wlock:
            if self._wfd >= 0:
                try:
                    os.close(self._wfd)
                except OSError:
                    pass
                self._wfd = -1
        try:
            self.proc.wait(10)
        except TimeoutError:
            self.proc.kill()
            self.proc.wait()
        self._closing = True  # the reader thread reads the end at once
        _release(self._wake)
        if self._reader_done.acquire(True, 10):
            self._reader_done.release()
        if self._role.acquire(True, 10):  # no caller reads it any more: closed, never read reused
            try:
                fd, self._fd = self._fd, -1
                if fd >= 0:
                    os.close(fd)
            except OSError:
                pass
            finally:
                self._role.release()
        with _bridges_lock:
            if self in _bridges:
                _bridges.remove(self)

    def _forked(self) -> None:
        """In a forked child: this bridge is the parent's. Its pipes are
        closed here (the parent's stay open), and its leases are not this
        process's."""
        self.dead = "it belongs to the parent process (this is a forked child)"
        self._pending, self._leases = {}, {}
        for fd in (self._wfd, self._fd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._wfd = self._fd = -1


def _release(lock: "Any") -> None:
    try:
        lock.release()
    except RuntimeError:  # released already
        pass


def result_of(reply: "Optional[Dict[str, Any]]") -> "Dict[str, Any]":
    """The result of a reply, or its error raised."""
    if reply is None:
        raise errors.BackendError("no reply from the governor bridge")
    if reply.get("ok"):
        return reply.get("result") or {}
    raise errors.from_wire(reply.get("error") or {})


def _after_fork_in_child() -> None:
    global _bridges_lock
    _bridges_lock = _thread.allocate_lock()  # a parent's thread may have held it
    old = list(_bridges)
    _bridges.clear()
    for b in old:
        b._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
