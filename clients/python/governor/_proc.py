"""The bridge's process, started with posix_spawn: ``import subprocess``
costs a cold script ~7 ms (locale, re, selectors, signal's enums), and the
bridge needs two pipes and a pid. As subprocess.Popen(close_fds=True,
restore_signals=True) does, the child gets no descriptor of ours but its
stdin and stdout pipes (and stderr), and SIGPIPE and SIGXFSZ as default."""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Dict, List, Optional


def _signals() -> "List[int]":
    import _signal
    return [getattr(_signal, n) for n in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(_signal, n)]


def _inherited() -> "List[int]":
    """Our inheritable descriptors above stderr: closed in the child."""
    for d in ("/proc/self/fd", "/dev/fd"):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        out = []
        for n in names:
            fd = int(n)
            if fd > 2:
                try:
                    if os.get_inheritable(fd):
                        out.append(fd)
                except OSError:  # the listing's own descriptor, closed since
                    pass
        return out
    return []


def _above_stderr(fd: int) -> int:
    """fd, or a non-inheritable copy of it above 2 (stdin, stdout or stderr
    were closed, and the pipe took their number)."""
    if fd > 2:
        return fd
    import fcntl
    try:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    finally:
        os.close(fd)


class Child:
    """A started child: ``pid``, ``stdin`` (the write end, a descriptor),
    ``stdout`` (the read end), ``wait``, ``kill``."""

    def __init__(self, argv: "List[str]", env: "Dict[str, str]") -> None:
        self.returncode: "Optional[int]" = None
        fds: "List[int]" = []
        try:
            for _ in range(2):
                r, w = os.pipe()
                fds += [_above_stderr(r), _above_stderr(w)]
            in_r, in_w, out_r, out_w = fds
            actions = [(os.POSIX_SPAWN_DUP2, in_r, 0), (os.POSIX_SPAWN_DUP2, out_w, 1)]
            spawn = os.posix_spawn if "/" in argv[0] else os.posix_spawnp
            closes = [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited()]
            # A session of its own: a Ctrl-C in the terminal reaches this
            # process alone, which then ends its bridge in order (stdin's
            # end: every lease released), not the bridge beside it.
            try:
                self.pid = spawn(argv[0], argv, env, file_actions=actions + closes, setsigdef=_signals(), setsid=True)
            except OSError:
                if not closes:
                    raise
                # One of them was closed meanwhile by another thread: they
                # are few and rare; start it without closing them.
                self.pid = spawn(argv[0], argv, env, file_actions=actions, setsigdef=_signals(), setsid=True)
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        os.close(in_r)
        os.close(out_w)
        self.stdin, self.stdout = in_w, out_r

    def poll(self) -> "Optional[int]":
        """The exit code once it exited (reaped), else None."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by someone else (SIGCHLD ignored)
                self.returncode = -1
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: "Optional[float]" = None) -> int:
        """Waits for its exit; TimeoutError after timeout seconds."""
        if timeout is None:
            while self.returncode is None:
                try:
                    _, status = os.waitpid(self.pid, 0)
                    self.returncode = os.waitstatus_to_exitcode(status)
                except ChildProcessError:
                    self.returncode = -1
            return self.returncode
        deadline = time.monotonic() + timeout
        nap = 0.0005
        while self.poll() is None:
            if time.monotonic() >= deadline:
                raise TimeoutError("governor bridge %d still running after %.0f s" % (self.pid, timeout))
            time.sleep(nap)
            nap = min(2 * nap, 0.05)
        return self.returncode  # type: ignore[return-value]

    def kill(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, 9)
            except ProcessLookupError:
                pass
