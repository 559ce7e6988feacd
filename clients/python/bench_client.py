#!/usr/bin/env python3
"""Benchmarks of the Python client, side by side in one run:

    GOVERNOR_BIN=path/to/governor /usr/bin/python3 clients/python/bench_client.py [--n 2000]

It starts its own redis-server (127.0.0.1, random port) and measures, on it:
  1. acquire+release pairs/s through governor.slot vs redis-py's Lock
     (Debian's python3-redis), one process, uncontended, in alternating
     blocks of 100 (target >= 0.5x);
  2. hand-off: release -> the next waiter's grant, p50 and p90, governor (two
     bridges) vs redis-py Lock's blocking acquire (which polls);
  3. one bridge holding 100 leases: its resident memory;
  4. an idle waiter: the CPU its bridge uses, and how often it wakes, while waiting 10 s.

--cold N: a cold script's time, phase by phase (no redis-server): N runs each
of `python3 -c pass`, `python3 -c "import governor"`, and a script that takes
one slot on the file backend, which stamps (CLOCK_MONOTONIC, the same in
every process) its start, import, bridge start (spawn + hello), first slot
(acquire + release); the process's exit is the time from its last stamp to
its reaping. The bridge's start alone (spawn + hello, no client) is measured
beside them. The scripts import a copy of the package compiled to bytecode,
as a wheel installs it. With --against BIN, each run's script and bridge take a turn
with BIN too (two builds side by side, as the load moves).
"""

import argparse
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import governor  # noqa: E402
from tests.support import RedisServer  # noqa: E402


def rss_kib(pid: int) -> int:
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wakeups(pid: int) -> int:
    """The context switches of every thread of pid: how often it woke."""
    import glob
    n = 0
    for path in glob.glob("/proc/%d/task/*/status" % pid):
        with open(path) as f:
            for line in f:
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    n += int(line.split()[1])
    return n


def pairs(n: int, *fns, block: int = 100) -> "list[float]":
    """Calls per second of each fn, n calls each, side by side: blocks of
    block calls in turn, so that a change of the machine's load falls on
    all of them alike; each fn's rate is that of its median block (a burst
    of load elsewhere spoils a block or two, not the figure)."""
    for fn in fns:
        fn()  # warm up
    spent: "list[list[float]]" = [[] for _ in fns]
    for done in range(0, n, block):
        k = min(block, n - done)
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            spent[i].append((time.perf_counter() - t0) / k)
    return [1 / statistics.median(s) for s in spent]


def pairs_cpu(n: int, fns: "list", pids: "list[int]", block: int = 100) -> "tuple[list[float], list[float]]":
    """pairs() with the CPU each pair takes, of this process and of the
    process pids[i] that fns[i] keeps busy, over all of fns[i]'s blocks
    (clock ticks: a sum is exact where a block's delta is not)."""
    for fn in fns:
        fn()  # warm up
    spent: "list[list[float]]" = [[] for _ in fns]
    cpu = [0.0 for _ in fns]
    for done in range(0, n, block):
        k = min(block, n - done)
        for i, fn in enumerate(fns):
            c0, t0 = time.process_time() + cpu_seconds(pids[i]), time.perf_counter()
            for _ in range(k):
                fn()
            spent[i].append((time.perf_counter() - t0) / k)
            cpu[i] += time.process_time() + cpu_seconds(pids[i]) - c0
    return [1 / statistics.median(s) for s in spent], [c / n for c in cpu]


def async_pairs(n: int, g: "governor.Governor", block: int = 100) -> "tuple[float, float]":
    """Pairs/s of ``with g.slot`` and of ``async with g.aslot`` (one task
    after another), in alternating blocks, each the rate of its median
    block: what asyncio's path costs over the sync one."""
    import asyncio

    async def ablock(k: int) -> float:
        t0 = time.perf_counter()
        for _ in range(k):
            async with g.aslot("apair", limit=1):
                pass
        return (time.perf_counter() - t0) / k

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(ablock(1))  # warm up
        sync, asyn = [], []
        for done in range(0, n, block):
            k = min(block, n - done)
            t0 = time.perf_counter()
            for _ in range(k):
                with g.slot("spair", limit=1):
                    pass
            sync.append((time.perf_counter() - t0) / k)
            asyn.append(loop.run_until_complete(ablock(k)))
    finally:
        loop.close()
    return 1 / statistics.median(sync), 1 / statistics.median(asyn)


def handoff(n: int, hold, wait_next, queued=None) -> "list[float]":
    """n hand-offs: hold() returns a release function; wait_next() blocks
    until granted and returns its own release. The release comes 50 ms
    after the waiter started (everything idle meanwhile: on this machine a
    process woken after 50 ms takes ~0.25 ms more per wake-up, redis-py's
    own release too), or, with queued, as soon as queued() says the waiter
    is queued (polled every ms, as handoff_process does)."""
    out = []
    for _ in range(n):
        release = hold()
        ready, granted = threading.Event(), []

        def waiter() -> None:
            ready.set()
            rel = wait_next()
            granted.append(time.perf_counter())
            rel()
        t = threading.Thread(target=waiter)
        t.start()
        ready.wait()
        if queued is None:
            time.sleep(0.05)  # let the waiter queue
        else:
            while not queued():
                time.sleep(0.001)
        t0 = time.perf_counter()
        release()
        t.join()
        out.append(granted[0] - t0)
    return out


WAITER = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import governor
g = governor.Governor(redis_url=sys.argv[2], project="bench")
g.slots()
print("ready", flush=True)
for line in sys.stdin:
    lease = g.acquire("hop", limit=1, wait=True)
    print(time.perf_counter(), flush=True)
    lease.release()
"""


def handoff_process(g: "governor.Governor", url: str, n: int) -> "list[float]":
    """n hand-offs from this process's release to a waiter in another
    process (its own bridge): perf_counter is the system's monotonic clock,
    the same in both."""
    import subprocess
    w = subprocess.Popen([sys.executable, "-c", WAITER, os.path.dirname(os.path.abspath(__file__)), url],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert w.stdout.readline().strip() == "ready"
    out = []
    for _ in range(n):
        lease = g.acquire("hop", limit=1, wait=True)
        w.stdin.write("go\n")
        w.stdin.flush()
        while not any(r.waiters for r in g.slots("hop")):
            time.sleep(0.001)
        t0 = time.perf_counter()
        lease.release()
        out.append(float(w.stdout.readline()) - t0)
    w.stdin.close()
    w.wait()
    return out


class RawBridge:
    """A bridge spoken to with no client: one thread writes a request and
    reads lines until its reply."""

    def __init__(self, url: str, *flags: str) -> None:
        import json
        import subprocess
        self.json = json
        self.p = subprocess.Popen([governor.find_binary(), "bridge", "--project", "bench", *flags],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  env=dict(os.environ, GOVERNOR_REDIS_URL=url))
        self.rid = 0
        self.call("hello", {"protocol": 1, "client": "raw", "pid": os.getpid()})

    def send(self, op: str, args: dict, noreply: bool = False) -> None:
        self.rid += 1
        req = {"id": self.rid, "op": op, "args": args}
        if noreply:
            req["noreply"] = True
        self.p.stdin.write((self.json.dumps(req) + "\n").encode())
        self.p.stdin.flush()

    def call(self, op: str, args: dict) -> dict:
        self.send(op, args)
        while True:
            m = self.json.loads(self.p.stdout.readline())
            if m.get("id") == self.rid:
                return m

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait()


def breakdown(n: int, srv, g, r) -> None:
    raw = RawBridge(srv.url)
    lock = r.lock("bench:bd", timeout=30)

    def redis_lock() -> None:
        lock.acquire(blocking=False)
        lock.release()

    def raw_pair() -> None:
        got = raw.call("acquire", {"resources": ["bd-raw"], "limit": 1})
        raw.call("release", {"lease": got["result"]["lease"]})

    def client_pair() -> None:
        with g.slot("bd", limit=1):
            pass
    names = ["redis-py PING", "redis-py Lock pair", "bridge, no client: no-op request", "bridge, no client: pair",
             "client pair (slot)"]
    fns = [r.ping, redis_lock, lambda: raw.call("cancel_request", {"request": 1 << 40}), raw_pair, client_pair]
    rates = pairs(n, *fns)
    for name, rate in zip(names, rates):
        print("%-34s %7.1f us" % (name, 1e6 / rate))
    raw.close()


GATE_CONFIG = """providers:
  bench: {max_concurrency: 512, capacity: true}
resources:
  hot: {limit: 512, capacity: true}
"""


def gate(n: int, srv, r, against: "str | None") -> None:
    """Issue 44's local grant, side by side: a provider gate's pair
    (``provider.call``) and a slot's, both granted from the bridge's
    capacity share (capacity: true), against redis-py's Lock pair; with
    the bridge spoken to with no client beside them (an acquire waited
    for, its release not: the floor of a pair) and a no-op round trip."""
    import tempfile
    cfg = os.path.join(tempfile.mkdtemp(prefix="govgate-"), "exec-defaults.yaml")
    with open(cfg, "w") as f:
        f.write(GATE_CONFIG)
    os.chmod(cfg, 0o600)
    g = governor.Governor(redis_url=srv.url, project="bench", config=cfg)
    p = g.provider("bench")
    lock = r.lock("bench:gate", timeout=30)
    raw = RawBridge(srv.url, "--config", cfg)

    def gate_pair() -> None:
        p.call(int)

    def slot_pair() -> None:
        with g.slot("hot", wait=True):
            pass

    def raw_pair() -> None:
        got = raw.call("acquire", {"resources": ["hot"], "if_busy": "wait"})
        raw.send("release", {"lease": got["result"]["lease"]}, noreply=True)

    def redis_pair() -> None:
        lock.acquire(blocking=False)
        lock.release()
    names = ["provider gate pair (capacity)", "slot pair (capacity)", "bridge, no client: pair (capacity)",
             "bridge, no client: no-op request", "redis-py Lock pair"]
    fns = [gate_pair, slot_pair, raw_pair, lambda: raw.call("cancel_request", {"request": 1 << 40}), redis_pair]
    others = []
    if against:
        o = governor.Governor(redis_url=srv.url, project="bench", config=cfg, binary=against)
        op = o.provider("bench")
        others = [o]
        names.insert(1, "provider gate pair (capacity), " + against)
        fns.insert(1, lambda: op.call(int))
    # The other process each pair keeps busy: its bridge, or redis-server.
    pids = [g.bridge_pid, raw.p.pid, raw.p.pid, srv.proc.pid]
    pids.insert(1, g.bridge_pid)
    if against:
        pids.insert(1, others[0].bridge_pid)
    rates, cpus = pairs_cpu(n, fns, pids)
    for name, rate, cpu in zip(names, rates, cpus):
        print("%-44s %7.1f us  %7.0f/s  CPU %5.1f us (this process + %s)" % (
            name, 1e6 / rate, rate, cpu * 1e6, "redis-server" if name.startswith("redis-py") else "its bridge"))
    rp = rates[-1]
    print("ratio to redis-py Lock pairs/s: provider gate %.2fx, slot %.2fx%s" % (
        rates[0] / rp, rates[names.index("slot pair (capacity)")] / rp,
        ", the gate against %s %.2fx" % (against, rates[1] / rp) if against else ""))
    raw.close()
    for x in [g] + others:
        x.close()


COLD = r"""
import time
t0 = time.perf_counter()
import governor
t1 = time.perf_counter()
g = governor.default()
g._bridge()
t2 = time.perf_counter()
with governor.slot("cold", limit=1):
    pass
t3 = time.perf_counter()
print(t0, t1, t2, t3, flush=True)
"""


def cold(n: int, against: "str | None" = None) -> None:
    """A cold script's phases, medians of n runs each, side by side: with
    against, each run takes its turn with that binary too, and each binary's
    rows are printed apart."""
    import compileall
    import shutil
    import subprocess
    import tempfile
    here = os.path.dirname(os.path.abspath(__file__))
    state = tempfile.mkdtemp(prefix="govcold-")
    # The package as an installed wheel has it: with its bytecode (pip
    # compiles at install), whatever PYTHONDONTWRITEBYTECODE says here; a
    # source tree without __pycache__ compiles every module at each import.
    pkg = tempfile.mkdtemp(prefix="govcold-pkg-")
    shutil.copytree(os.path.join(here, "governor"), os.path.join(pkg, "governor"),
                    ignore=shutil.ignore_patterns("__pycache__", "_bin"))
    compileall.compile_dir(os.path.join(pkg, "governor"), quiet=1)
    env = dict(os.environ, GOVERNOR_DIR=state, PYTHONPATH=pkg)
    py = sys.executable
    binaries = [("", governor.find_binary())] + ([("against: ", against)] if against else [])
    rows: "dict[str, list[float]]" = {}

    def add(k: str, v: float) -> None:
        rows.setdefault(k, []).append(v * 1000)

    def wall(argv: "list[str]", e: "dict[str, str]") -> "tuple[float, float, str]":
        t = time.perf_counter()
        p = subprocess.run(argv, env=e, stdout=subprocess.PIPE, text=True, check=True)
        return t, time.perf_counter(), p.stdout

    hello = b'{"id":1,"op":"hello","args":{"protocol":1,"client":"bench","pid":1}}\n'
    for _ in range(n):
        t, e, _ = wall([py, "-c", "pass"], env)
        add("python3 -c pass", e - t)
        t, e, _ = wall([py, "-c", "import governor"], env)
        add("python3 -c 'import governor'", e - t)
        for label, binary in binaries:
            benv = dict(env, GOVERNOR_BIN=binary)
            t, e, out = wall([py, "-c", COLD], benv)
            t0, t1, t2, t3 = map(float, out.split())
            add(label + "cold slot script, wall", e - t)
            add(label + "  interpreter start", t0 - t)
            add(label + "  import governor", t1 - t0)
            add(label + "  bridge start (spawn + hello)", t2 - t1)
            add(label + "  first slot (acquire + release)", t3 - t2)
            add(label + "  exit", e - t3)
            t = time.perf_counter()
            b = subprocess.Popen([binary, "bridge"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=benv)
            b.stdin.write(hello)
            b.stdin.flush()
            b.stdout.readline()
            add(label + "bridge alone: spawn + hello", time.perf_counter() - t)
            b.stdin.close()
            b.wait()
            b.stdout.close()
    shutil.rmtree(pkg)
    shutil.rmtree(state, ignore_errors=True)
    for k, v in rows.items():
        print("%-46s %7.2f ms" % (k, statistics.median(v)))
    base = statistics.median(rows["python3 -c pass"])
    for label, binary in binaries:
        script = statistics.median(rows[label + "cold slot script, wall"])
        bridge = statistics.median(rows[label + "  bridge start (spawn + hello)"])
        print("%s%s: cold slot script / bare python3: %.2fx (target <= 2x); without the bridge's start: %.2fx"
              % (label, binary, script / base, (script - bridge) / base))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--handoffs", type=int, default=50)
    ap.add_argument("--breakdown", action="store_true", help="where a pair's time goes, side by side: redis-py's "
                    "PING and Lock pair, the bridge spoken to with no client (one thread: a no-op request, an "
                    "acquire+release), the client's pair; then stop")
    ap.add_argument("--gate", action="store_true", help="issue 44's local grant: a provider gate's pair and a "
                    "slot's from the bridge's capacity share (capacity: true) against redis-py's Lock pair, beside "
                    "the bridge with no client; with --against BIN, that build's gate too; then stop")
    ap.add_argument("--against", metavar="BIN", help="another governor binary: its pairs/s too (with --cold: its "
                    "cold script), side by side, then stop (to compare two builds)")
    ap.add_argument("--cold", type=int, metavar="N", help="a cold script's phases (import, bridge start, first "
                    "slot, exit), N runs each, on the file backend; then stop")
    a = ap.parse_args()
    if a.cold:
        cold(a.cold, a.against)
        return 0
    import redis  # Debian's python3-redis
    srv = RedisServer()
    try:
        g = governor.Governor(redis_url=srv.url, project="bench")
        g2 = governor.Governor(redis_url=srv.url, project="bench")
        r = redis.Redis(host="127.0.0.1", port=srv.port)

        def gov_pair() -> None:
            with g.slot("pair", limit=1):
                pass

        lock = r.lock("bench:pair", timeout=30)

        def redis_pair() -> None:
            lock.acquire(blocking=False)
            lock.release()

        if a.gate:
            gate(a.n, srv, r, a.against)
            for x in (g, g2):
                x.close()
            return 0
        if a.breakdown:
            breakdown(a.n, srv, g, r)
            for x in (g, g2):
                x.close()
            return 0
        if a.against:
            other = governor.Governor(redis_url=srv.url, project="bench", binary=a.against)

            def other_pair() -> None:
                with other.slot("pair2", limit=1):
                    pass
            gp, op, rp = pairs(a.n, gov_pair, other_pair, redis_pair)
            print("pairs/s: governor %.0f (ratio %.3fx), %s %.0f (ratio %.3fx), redis-py Lock %.0f; %.2fx the other"
                  % (gp, gp / rp, a.against, op, op / rp, rp, gp / op))
            for x in (g, g2, other):
                x.close()
            return 0
        raw = RawBridge(srv.url)

        def raw_pair() -> None:
            got = raw.call("acquire", {"resources": ["pair-raw"], "limit": 1})
            raw.call("release", {"lease": got["result"]["lease"]})
        gp, bp, rp = pairs(a.n, gov_pair, raw_pair, redis_pair)
        raw.close()
        print("pairs/s: governor %.0f, redis-py Lock %.0f, ratio %.2fx (target >= 0.8x); the bridge with no client "
              "(one thread, bare NDJSON) %.0f: governor/bare %.2fx" % (gp, rp, gp / rp, bp, gp / bp))
        sp, ap = async_pairs(min(a.n, 2000), g)
        print("pairs/s, one after another: sync slot %.0f, async aslot %.0f (async/sync %.2fx)" % (sp, ap, ap / sp))

        def gov_hold():
            lease = g.acquire("ho", limit=1)
            return lease.release

        def gov_next():
            lease = g2.acquire("ho", limit=1, wait=True)
            return lease.release

        def redis_hold():
            lk = r.lock("bench:ho", timeout=30)
            lk.acquire()
            return lk.release

        def redis_next():
            lk = r.lock("bench:ho", timeout=30)
            lk.acquire(blocking=True)
            return lk.release

        def gov_next_same():
            lease = g.acquire("ho", limit=1, wait=True)
            return lease.release

        gh, rh = handoff(a.handoffs, gov_hold, gov_next), handoff(a.handoffs, redis_hold, redis_next)
        gq = handoff(a.handoffs, gov_hold, gov_next, queued=lambda: any(x.waiters for x in g.slots("ho")))
        gs = handoff(a.handoffs, gov_hold, gov_next_same)
        gsq = handoff(a.handoffs, gov_hold, gov_next_same, queued=lambda: any(x.waiters for x in g2.slots("ho")))
        gp2 = handoff_process(g, srv.url, a.handoffs)
        q = lambda xs, p: sorted(xs)[int(p * (len(xs) - 1))] * 1000  # noqa: E731
        print("hand-off p50/p90 ms, waiter thread in this process: governor %.2f/%.2f, redis-py Lock %.2f/%.2f "
              "(two bridges)" % (statistics.median(gh) * 1000, q(gh, 0.9), statistics.median(rh) * 1000, q(rh, 0.9)))
        print("hand-off p50/p90 ms, waiter thread in this process, released once it is queued (no idle): governor %.2f/%.2f"
              % (statistics.median(gq) * 1000, q(gq, 0.9)))
        print("hand-off p50/p90 ms, waiter thread sharing the holder's bridge (one Governor): governor %.2f/%.2f "
              "(target p50 <= 0.5 ms); released once it is queued: %.2f/%.2f"
              % (statistics.median(gs) * 1000, q(gs, 0.9), statistics.median(gsq) * 1000, q(gsq, 0.9)))
        print("hand-off p50/p90 ms, waiter in another process: governor %.2f/%.2f"
              % (statistics.median(gp2) * 1000, q(gp2, 0.9)))

        g3 = governor.Governor(redis_url=srv.url, project="bench")
        pid = g3.bridge_pid
        before = rss_kib(pid)
        leases = [g3.acquire("many%d" % i, limit=1) for i in range(100)]
        time.sleep(1)
        after = rss_kib(pid)
        print("one bridge, 100 leases: RSS %d KiB (%d KiB before them, %.1f KiB per lease)"
              % (after, before, (after - before) / 100))
        for lease in leases:
            lease.release()

        holder = g.acquire("idle", limit=1)
        t = threading.Thread(target=lambda: g2.acquire("idle", limit=1, wait=True).release())
        t.start()
        time.sleep(2)  # past the bridge's rest (a second without requests)
        wpid = g2.bridge_pid
        c0, w0, t0 = cpu_seconds(wpid), wakeups(wpid), time.monotonic()
        time.sleep(10)
        c1, w1, t1 = cpu_seconds(wpid), wakeups(wpid), time.monotonic()
        holder.release()
        t.join()
        print("idle waiter: its bridge used %.3f s CPU in %.1f s (%.2f%%), %d context switches"
              % (c1 - c0, t1 - t0, 100 * (c1 - c0) / (t1 - t0), w1 - w0))
        for x in (g, g2, g3):
            x.close()
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
