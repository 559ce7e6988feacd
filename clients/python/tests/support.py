"""Test support: the governor binary, a file or real-Redis backend per test
class, worker processes and work-interval files."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT) if ROOT not in sys.path else None

import governor  # noqa: E402

DEADLINE = 60.0  # generous: the machine may be loaded; nothing waits this long when things work

# The bridges of these tests keep their machine state (the Redis loss
# witness, one per server URL) in a dir of their own. In the user's, shared
# with earlier runs, a fresh redis-server on a port an earlier one used
# reads as that server's data lost.
STATE_HOME = tempfile.mkdtemp(prefix="governor-test-state-")
os.environ["XDG_STATE_HOME"] = STATE_HOME
atexit.register(shutil.rmtree, STATE_HOME, True)


def bridge_required() -> bool:
    """A missing binary fails the suite (not skips it) when
    GOVERNOR_REQUIRE_BRIDGE=1 or under CI (CI set, as CI services do)."""
    return os.environ.get("GOVERNOR_REQUIRE_BRIDGE") == "1" or os.environ.get("CI", "") not in ("", "0", "false")


def binary() -> str:
    try:
        return governor.find_binary()
    except governor.BackendError as e:
        if bridge_required():
            raise RuntimeError("%s (and GOVERNOR_REQUIRE_BRIDGE=1 or CI is set: the suite must not skip)" % e) from None
        raise unittest.SkipTest(str(e))


class RedisServer:
    """A redis-server of its own on 127.0.0.1 and a random port."""

    def __init__(self) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            if os.environ.get("GOVERNOR_REQUIRE_REDIS") == "1":
                raise RuntimeError("redis-server not found and GOVERNOR_REQUIRE_REDIS=1")
            raise unittest.SkipTest("redis-server not found")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.argv = [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self._start()
        self.url = "redis://127.0.0.1:%d/0" % self.port

    def _start(self) -> None:
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            try:
                if self.command("PING") == b"+PONG":
                    return
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise RuntimeError("redis-server did not start")

    def command(self, *args: str) -> bytes:
        """Sends one command; returns the first line of the reply."""
        req = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in args)
        with socket.create_connection(("127.0.0.1", self.port), DEADLINE) as c:
            c.sendall(req)
            reply = b""
            while not reply.endswith(b"\r\n"):
                chunk = c.recv(256)
                if not chunk:
                    raise OSError("redis-server closed the connection")
                reply += chunk
        return reply.split(b"\r\n", 1)[0]

    def restart(self) -> None:
        """Kills the server and starts it again on the same port: with no
        persistence (--save "", no AOF), its data is gone."""
        self.stop()
        self._start()

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


class Backend:
    """Governor keywords (and the bridge's environment) for one backend."""

    def __init__(self, kind: str, tmp: str, redis: Optional[RedisServer]) -> None:
        self.kind = kind
        self.dir = os.path.join(tmp, "state")
        self.redis = redis
        self.project = "t%d" % (int(time.time() * 1000) % 10 ** 9)

    def kwargs(self) -> Dict[str, Any]:
        kw: Dict[str, Any] = {"project": self.project}
        if self.kind == "redis":
            assert self.redis is not None
            kw["redis_url"] = self.redis.url
        else:
            kw["dir"] = self.dir
        return kw

    def env(self) -> Dict[str, str]:
        env = dict(os.environ, GOVERNOR_PROJECT=self.project, PYTHONPATH=ROOT)
        env.pop("GOVERNOR_HELD", None)
        env.pop("GOVERNOR_TOKEN", None)
        env.pop("HEAVY_LOCK_HELD", None)
        if self.kind == "redis":
            assert self.redis is not None
            env["GOVERNOR_REDIS_URL"] = self.redis.url
            env.pop("GOVERNOR_DIR", None)
        else:
            env["GOVERNOR_DIR"] = self.dir
            env.pop("GOVERNOR_REDIS_URL", None)
        env["GOVERNOR_BIN"] = binary()
        return env


class FileCase(unittest.TestCase):
    """A test case on the file backend; RedisCase runs the same tests on a
    real redis-server."""

    kind = "file"
    redis: Optional[RedisServer] = None

    def setUp(self) -> None:
        binary()
        self.tmp = tempfile.mkdtemp(prefix="govpy-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.backend = Backend(self.kind, self.tmp, type(self).redis)
        self.procs: List[subprocess.Popen] = []
        self.addCleanup(self._reap)

    def _reap(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            if p.stdout is not None:
                p.stdout.close()

    def gov(self, **kw: Any) -> governor.Governor:
        g = governor.Governor(**dict(self.backend.kwargs(), **kw))
        self.addCleanup(g.close)
        return g

    def path(self, name: str) -> str:
        return os.path.join(self.tmp, name)

    def config_file(self, text: str) -> str:
        """An exec-defaults.yaml holding text (mode 0600, as the CLI wants it)."""
        config = self.path("exec-defaults.yaml")
        with open(config, "w") as f:
            f.write(text)
        os.chmod(config, 0o600)
        return config

    def worker(self, *args: str) -> subprocess.Popen:
        """Starts tests/worker.py with args (see there)."""
        p = subprocess.Popen([sys.executable, os.path.join(HERE, "worker.py")] + list(args),
                             env=self.backend.env(), stdout=subprocess.PIPE, text=True)
        self.procs.append(p)
        return p

    def wait_for(self, what: str, cond: Any, deadline: float = DEADLINE) -> Any:
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            v = cond()
            if v:
                return v
            time.sleep(0.01)
        self.fail("timed out waiting for " + what)


class RedisCaseMixin:
    kind = "redis"

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cls.redis = RedisServer()

    @classmethod
    def tearDownClass(cls) -> None:
        if cls.redis is not None:
            cls.redis.stop()
        super().tearDownClass()  # type: ignore[misc]


def read_lines(path: str) -> List[List[str]]:
    try:
        with open(path) as f:
            return [line.split() for line in f if line.strip()]
    except FileNotFoundError:
        return []


def assert_no_overlap(tc: unittest.TestCase, path: str) -> List[List[str]]:
    """The work intervals in path (S WHO / E WHO lines, appended in the
    order they happened) never overlap: each S is followed by its own E
    before the next S."""
    lines = read_lines(path)
    inside: Optional[str] = None
    for kind, who, *_ in lines:
        if kind == "S":
            tc.assertIsNone(inside, "%s started while %s held the slot: %s" % (who, inside, lines))
            inside = who
        elif kind == "E":
            tc.assertEqual(inside, who, "E of %s while %s held: %s" % (who, inside, lines))
            inside = None
    return lines


def append(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def dumps(v: Any) -> str:
    return json.dumps(v)
