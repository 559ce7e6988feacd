# The soak's Python client: threads and asyncio tasks taking the slot
# "shared" and the provider gate "fake" (capacity: true, granted from the
# bridge's share) over and over (and the gate
# "budgeted", charged: budget_loop), each working in
# 20 ms chunks that it appends to a span file (CLOCK_MONOTONIC ns), and
# stopping at once when its lease is lost. Run by faults/soak; argv:
# SPANDIR WHO. Exits after 30 s without a single grant (the soak starts
# it again).
import asyncio, os, random, sys, threading, time

import governor

spans, who = sys.argv[1], sys.argv[2]
gov = governor.Governor(config=os.environ["CFG"])
last_grant = [time.monotonic()]
rng = random.Random(os.getpid())


def record(res, name, start):
    with open(os.path.join(spans, "%s-%s.spans" % (res, who)), "a") as f:
        f.write("%s %d %d\n" % (name, start, time.monotonic_ns()))


def work(lease, res, name, chunks):
    for _ in range(chunks):
        if lease.lost.is_set():
            return
        start = time.monotonic_ns()
        lost = lease.lost.wait(0.02)  # a chunk stops the moment the lease is lost
        record(res, name, start)
        if lost:
            return


def thread_loop(n):
    name = "%s.t%d" % (who, n)
    while True:
        try:
            if rng.random() < 0.5:
                with gov.slot("shared", wait=True, timeout=20) as lease:
                    last_grant[0] = time.monotonic()
                    work(lease, "shared", name, rng.randint(2, 30))
            else:
                lease = gov.acquire("provider:fake", wait=True, timeout=20)
                last_grant[0] = time.monotonic()
                try:
                    work(lease, "provider:fake", name, rng.randint(2, 30))
                finally:
                    lease.release()
        except governor.GovernorError:
            time.sleep(0.1)


async def task_loop(n):
    name = "%s.a%d" % (who, n)
    while True:
        try:
            async with gov.slot("shared", wait=True, timeout=20) as lease:
                last_grant[0] = time.monotonic()
                for _ in range(rng.randint(2, 30)):
                    start = time.monotonic_ns()
                    await asyncio.sleep(0.02)
                    record("shared", name, start)
        except (governor.GovernorError, asyncio.CancelledError):
            await asyncio.sleep(0.1)


def budget_loop():
    """The provider gate "budgeted" with an estimate of 1 USD (the soak's
    budget loops, budget.go): each admitted call logs its start (wall
    clock, ns) before its work."""
    gate = gov.provider("budgeted", wait=False)

    def call():
        with open(os.environ["SOAK_BUDGET_LOG"], "a") as f:
            f.write("%d\n" % time.time_ns())
        time.sleep(0.2)

    while True:
        try:
            gate.call(call, estimate=1)
        except governor.GovernorError:
            pass
        time.sleep(0.3 + rng.random() * 0.3)


def main():
    for n in range(3):
        threading.Thread(target=thread_loop, args=(n,), daemon=True).start()
    threading.Thread(target=budget_loop, daemon=True).start()

    async def amain():
        tasks = [asyncio.ensure_future(task_loop(n)) for n in range(3)]
        while time.monotonic() - last_grant[0] < 30:
            await asyncio.sleep(1)
        for t in tasks:
            t.cancel()

    asyncio.run(amain())
    os._exit(3)


main()
