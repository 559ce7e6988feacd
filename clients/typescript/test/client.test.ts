// The client against a stand-in bridge: protocol refusal, error classes,
// loss events, bridge death, binary lookup, option checking.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Governor, Busy, Skipped, Superseded, Withdrawn, LeaseLost, BackendError, ProtocolError, GovernorError, seconds, findBinary } from "../src/index.js";
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { platformPackage } from "../src/index.js";
import { fakeBin } from "./helpers.js";

test("a bridge speaking another protocol is refused, naming both versions", async () => {
  const gov = new Governor({ bin: fakeBin({ FAKE_PROTOCOL: "2" }) });
  await assert.rejects(gov.acquire("x"), (e: unknown) => {
    assert.ok(e instanceof ProtocolError, String(e));
    assert.match(e.message, /protocol 2/);
    assert.match(e.message, /protocol 1/);
    return true;
  });
});

test("each error kind is its own class with the CLI's code and message", async () => {
  const cases: [string, number, Function][] = [
    ["busy", 73, Busy],
    ["skipped", 75, Skipped],
    ["superseded", 76, Superseded],
    ["withdrawn", 73, Withdrawn],
    ["cancelled", 125, Withdrawn],
    ["lost", 122, LeaseLost],
    ["backend", 125, BackendError],
    ["failure", 125, GovernorError],
  ];
  for (const [kind, code, cls] of cases) {
    const err = { code, kind, message: `governor: x is ${kind}`, resource: "x", holders: [{ lease_id: "a" }] };
    const gov = new Governor({ bin: fakeBin({ FAKE_ERROR: JSON.stringify(err) }) });
    await assert.rejects(gov.acquire("x"), (e: unknown) => {
      assert.ok(e instanceof cls, `${kind}: ${e}`);
      // Bad input is no backend failure: a caller retrying BackendError must not retry it.
      assert.equal(e instanceof BackendError, cls === BackendError, `${kind}: ${e}`);
      assert.ok(e instanceof GovernorError);
      assert.equal(e.code, code);
      assert.equal(e.kind, kind);
      assert.equal(e.message, `governor: x is ${kind}`);
      assert.deepEqual(e.holders, [{ lease_id: "a" }]);
      assert.equal(e.details.resource, "x");
      return true;
    });
    await gov.close();
  }
});

test("a lost event for a lease no Lease was made for is not kept", async () => {
  const gov = new Governor({ bin: fakeBin() });
  const bridge = await gov.connect();
  const kept = () => (bridge as unknown as { lostLeases: Map<string, unknown> }).lostLeases;
  assert.ok(kept() instanceof Map, "the bridge's map of early losses was renamed: update this test");
  for (let i = 0; i < 3; i++) await bridge.call("lose", { lease: `L${900 + i}` });
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual([...kept().keys()], []);
  // A loss right after the grant still reaches the Lease made from it.
  const lease = await gov.acquire("lose-me");
  if (!lease.signal.aborted) await new Promise((r) => lease.signal.addEventListener("abort", r));
  assert.ok(lease.lost);
  await gov.close();
});

test("the bridge starts with one processor unless our environment says", { skip: process.platform !== "linux" && "reads /proc/PID/environ" }, async () => {
  // GOMAXPROCS=1 from its start spares the bridge's runtime a stop to
  // shrink to one processor (docs/benchmarks.md); a value of ours is the bridge's.
  for (const [ours, want] of [[undefined, "1"], ["3", "3"]] as const) {
    const env = { ...process.env };
    delete env.GOMAXPROCS;
    if (ours !== undefined) env.GOMAXPROCS = ours;
    const gov = new Governor({ bin: fakeBin(), env });
    const lease = await gov.acquire("x");
    const environ = readFileSync(`/proc/${gov.bridgeProcess!.pid}/environ`, "latin1").split("\0");
    await lease.release();
    await gov.close();
    assert.deepEqual(environ.filter((kv) => kv.startsWith("GOMAXPROCS=")), [`GOMAXPROCS=${want}`], `ours: ${ours}`);
  }
});

test("a lost event aborts lease.signal with a LeaseLost; release after it does not throw", async () => {
  const gov = new Governor({ bin: fakeBin() });
  const lease = await gov.acquire("lose-me");
  if (!lease.signal.aborted) await new Promise((r) => lease.signal.addEventListener("abort", r));
  assert.ok(lease.lost);
  assert.ok(lease.signal.reason instanceof LeaseLost);
  assert.match(lease.signal.reason.message, /taken over/);
  assert.throws(() => lease.throwIfLost(), LeaseLost);
  await lease.release();
  await gov.close();
});

test("a loss of a held lease reaches that lease only", async () => {
  const gov = new Governor({ bin: fakeBin() });
  const [a, b, c] = [await gov.acquire("a"), await gov.acquire("b"), await gov.acquire("c")];
  await b.touch(); // the fake bridge then says b is lost
  if (!b.signal.aborted) await new Promise((r) => b.signal.addEventListener("abort", r));
  assert.ok(b.lost);
  assert.match(b.signal.reason.message, /\(touched\) was lost: taken over/);
  assert.ok(!a.lost && !a.signal.aborted && !c.lost && !c.signal.aborted, "another lease's loss is not theirs");
  await gov.close();
});

test("withSlot throws the loss even when the body returned", async () => {
  const gov = new Governor({ bin: fakeBin() });
  await assert.rejects(
    gov.withSlot("lose-me", {}, async (lease) => {
      if (!lease.signal.aborted) await new Promise((r) => lease.signal.addEventListener("abort", r));
      return 1;
    }),
    LeaseLost,
  );
  assert.equal(await gov.withSlot("x", {}, (lease) => lease.token), 2);
  await gov.close();
});

test("a killed bridge aborts every lease's signal and fails requests in flight", async () => {
  const gov = new Governor({ bin: fakeBin() });
  const a = await gov.acquire("x");
  const b = await gov.acquire(["y", "z"]);
  assert.deepEqual(b.resources.map((r) => r.resource), ["y", "z"]);
  gov.bridgeProcess!.kill("SIGKILL");
  await new Promise((r) => b.signal.addEventListener("abort", r));
  assert.ok(a.signal.aborted && a.signal.reason instanceof LeaseLost);
  assert.ok(b.signal.reason instanceof LeaseLost);
  await a.release(); // the bridge is gone: nothing to do, no throw
  // The next use starts a new bridge.
  const c = await gov.acquire("x");
  assert.equal(c.token, 1);
  await gov.close();
});

test("await using releases at the end of the block", async () => {
  const gov = new Governor({ bin: fakeBin() });
  let seen: AbortSignal;
  {
    await using lease = await gov.acquire("x");
    seen = lease.signal;
    assert.equal(seen.aborted, false);
    assert.equal(lease.handle, "x@id.secret");
    assert.deepEqual(lease.env, { GOVERNOR_HELD: "x" });
  }
  assert.equal(seen.aborted, true, "released: the signal ends with the lease");
  await gov.close();
});

test("replies and events split across reads, a UTF-8 character cut, arrive whole", { timeout: 60_000 }, async () => {
  const gov = new Governor({ bin: fakeBin() });
  const bridge = await gov.connect();
  const events: unknown[] = [];
  bridge.onEvent((e) => events.push(e));
  const args = { s: "héllo € 😀 ünïcödé", n: [1, 2, 3] };
  assert.deepEqual(await gov.call("echo", args), args);
  assert.deepEqual(events, [{ event: "echoed", args }]);
  await gov.close();
});

test("a signal first read after release or loss is already aborted, with the reason", async () => {
  const gov = new Governor({ bin: fakeBin() });
  const held = await gov.acquire("x");
  await held.release();
  assert.equal(held.signal.aborted, true, "released before signal was read");
  assert.ok(held.signal.reason instanceof LeaseLost);
  assert.match(held.signal.reason.message, /released/);
  const lost = await gov.acquire("lose-me");
  const deadline = Date.now() + 30_000;
  while (!lost.lost && Date.now() < deadline) await new Promise((r) => setImmediate(r));
  assert.equal(lost.signal.aborted, true, "lost before signal was read");
  assert.match(lost.signal.reason.message, /taken over/);
  await gov.close();
});

test("bad options are refused naming the value and what is allowed, before any request", async () => {
  const gov = new Governor({ bin: "/nonexistent/governor" });
  await assert.rejects(gov.acquire("x", { ifBusy: "later" as "wait" }), /ifBusy "later": want fail, wait or skip/);
  await assert.rejects(gov.acquire("x", { wait: true, ifBusy: "skip" }), /wait: true contradicts ifBusy: "skip"/);
  await assert.rejects(gov.acquire("x", { ttl: "ten" }), /duration "ten": want/);
  await assert.rejects(gov.acquire("x", { ttl: -1 }), /duration -1/);
  assert.equal(seconds(1500), 1.5);
  assert.equal(seconds("1m30s"), 90);
  assert.equal(seconds("250ms"), 0.25);
});

test("the binary: GOVERNOR_BIN first, then the platform package, then PATH; a clear error when none", () => {
  assert.equal(findBinary({ GOVERNOR_BIN: "/bin/sh", PATH: "" }), "/bin/sh");
  assert.throws(() => findBinary({ GOVERNOR_BIN: "/nonexistent/governor", PATH: "" }), /GOVERNOR_BIN=\/nonexistent\/governor is not an executable/);
  const bin = fakeBin();
  const path = `/nonexistent:${bin.replace(/\/governor$/, "")}`;
  let pkg: string | undefined;
  try {
    pkg = createRequire(import.meta.url).resolve(`${platformPackage()}/package.json`);
  } catch {
    // not installed (the source tree): PATH is next
  }
  if (pkg) {
    // Installed from the packages (CI): the platform package's binary wins over PATH.
    assert.equal(findBinary({ PATH: path }), join(dirname(pkg), "bin", "governor"));
  } else {
    assert.equal(findBinary({ PATH: path }), bin);
    assert.throws(() => findBinary({ PATH: "/nonexistent" }), /set GOVERNOR_BIN, install @governor\/cli-/);
  }
});
