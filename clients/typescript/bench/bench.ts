// Side by side, on one redis-server this script starts: acquire+release
// pairs/s and hand-off latency (release -> the next waiter holds) of
// governor's client (through its bridge), of the bridge alone driven by a
// bare NDJSON loop (the floor under any client: pipes + the Go side), and
// of redis-semaphore (on ioredis). Subjects take turns in short bursts, so
// that load from elsewhere falls on all of them alike.
//   cd clients/typescript && npm ci && npm run build && GOVERNOR_BIN=/tmp/governor node dist/bench/bench.js [SECONDS] [--against OTHER/dist/src/index.js]
// --against adds another build of the client (e.g. main's) as a row.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { Redis } from "ioredis";
import { Semaphore } from "redis-semaphore";
import { Governor, findBinary } from "../src/index.js";
import { redisBackend } from "../test/helpers.js";

const argv = process.argv.slice(2);
const at = argv.indexOf("--against");
const against = at >= 0 ? argv.splice(at, 2)[1] : undefined;
if (at >= 0 && !against) throw new Error("--against: want the path of another build's dist/src/index.js");
const seconds = Number(argv[0] ?? "3");
if (!(seconds > 0)) throw new RangeError(`SECONDS ${argv[0]}: want a number of seconds > 0`);
const burst = 0.5; // seconds per turn
const rounds = 200; // hand-offs per subject
const parallel = 50; // leases at once, in the parallel row

/** Take the slot; the returned function releases it. */
type Take = () => Promise<() => Promise<void>>;

/** The bridge with no client library: requests written, replies matched by id. */
class Bare {
  private readonly child: ChildProcess;
  private readonly replies = new Map<number, (m: any) => void>();
  private nextId = 1;
  private buf = "";
  constructor(bin: string, project: string, env: NodeJS.ProcessEnv, flags: string[] = []) {
    this.child = spawn(bin, ["bridge", "--project", project, ...flags], { stdio: ["pipe", "pipe", "inherit"], env });
    this.child.stdout!.setEncoding("utf8");
    this.child.stdout!.on("data", (d: string) => {
      this.buf += d;
      for (let nl = this.buf.indexOf("\n"); nl >= 0; nl = this.buf.indexOf("\n")) {
        const m = JSON.parse(this.buf.slice(0, nl));
        this.buf = this.buf.slice(nl + 1);
        this.replies.get(m.id)?.(m);
        this.replies.delete(m.id);
      }
    });
  }
  async call(op: string, args: object): Promise<any> {
    const m: any = await new Promise((r) => {
      const id = this.nextId++;
      this.replies.set(id, r);
      this.child.stdin!.write(JSON.stringify({ id, op, args }) + "\n");
    });
    if (!m.ok) throw new Error(`${op}: ${m.error.message}`);
    return m.result;
  }
  /** A request not waited for (noreply): no reply unless it fails. */
  quiet(op: string, args: object): void {
    this.child.stdin!.write(JSON.stringify({ id: this.nextId++, op, args, noreply: true }) + "\n");
  }
  take(resource: string, wait: boolean): Take {
    return async () => {
      const r = await this.call("acquire", { resources: [resource], limit: 1, if_busy: wait ? "wait" : "fail" });
      return async () => void (await this.call("release", { lease: r.lease }));
    };
  }
  close(): void {
    this.child.stdin!.end();
  }
}

interface Row {
  name: string;
  pair: Take;
  /** N slots at once (distinct resources), released at once. */
  many?: (n: number) => Promise<void>;
  hold: Take;
  wait: Take;
  pairs: number[];
  cpu: number[];
  manyPairs: number[];
  hand: number[];
}

async function burstOf(f: () => Promise<number>, r: number[], cpu?: number[]): Promise<void> {
  const end = performance.now() + burst * 1000;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let n = 0;
  while (performance.now() < end) n += await f();
  r.push(n / ((performance.now() - t0) / 1000));
  cpu?.push(process.cpuUsage(c0).user / n);
}

/** Hand-off: A holds, B waits; the time from A's release call to B holding. */
async function handoff(row: Pick<Row, "hold" | "wait" | "hand">): Promise<void> {
  const release = await row.hold();
  const granted = row.wait().then((rel) => ({ at: performance.now(), rel }));
  await new Promise((r) => setTimeout(r, 5)); // B is waiting
  const t0 = performance.now();
  await release();
  const { at, rel } = await granted;
  row.hand.push(at - t0);
  await rel();
}

const sorted = (a: number[]) => [...a].sort((x, y) => x - y);
const q = (a: number[], f: number) => sorted(a)[Math.min(a.length - 1, Math.floor(f * a.length))];

const backend = (await redisBackend())!;
if (!backend) throw new Error("redis-server not found on PATH");
const url = backend.env.GOVERNOR_REDIS_URL;
const closers: (() => unknown)[] = [];
try {
  const project = `bench-${process.pid}`;
  const env = { ...process.env, GOVERNOR_BACKEND: "redis", GOVERNOR_REDIS_URL: url };
  const rows: Row[] = [];
  const row = (name: string, r: Omit<Row, "name" | "pairs" | "cpu" | "manyPairs" | "hand">) =>
    rows.push({ name, ...r, pairs: [], cpu: [], manyPairs: [], hand: [] });

  const clientRow = (name: string, G: typeof Governor, prefix: string) => {
    const g1 = new G({ project, env });
    const g2 = new G({ project, env });
    closers.push(() => g1.close(), () => g2.close());
    const take = (g: Governor, resource: string, wait: boolean): Take => async () => {
      const l = await g.acquire(resource, { limit: 1, wait });
      return () => l.release();
    };
    row(name, {
      pair: take(g1, `${prefix}p`, false),
      many: async (n) => {
        const ls = await Promise.all(Array.from({ length: n }, (_, i) => g1.acquire(`${prefix}m${i}`, { limit: 1 })));
        await Promise.all(ls.map((l) => l.release()));
      },
      hold: take(g1, `${prefix}h`, false),
      wait: take(g2, `${prefix}h`, true),
    });
    return { hold: take(g1, `${prefix}s`, false), wait: take(g1, `${prefix}s`, true) };
  };
  // The same hand-off with holder and waiter on one Governor (one bridge).
  const oneBridge = { ...clientRow("governor", Governor, "g"), hand: [] as number[] };
  if (against) clientRow("governor (against)", (await import(pathToFileURL(resolve(against)).href)).Governor, "o");

  const bin = findBinary(env);
  const b1 = new Bare(bin, project, env);
  const b2 = new Bare(bin, project, env);
  closers.push(() => b1.close(), () => b2.close());
  await b1.call("hello", { protocol: 1, client: "bench", pid: process.pid });
  await b2.call("hello", { protocol: 1, client: "bench", pid: process.pid });
  row("bridge, bare loop", {
    pair: b1.take("bp", false),
    many: async (n) => {
      const rs = await Promise.all(Array.from({ length: n }, (_, i) => b1.call("acquire", { resources: [`bm${i}`], limit: 1, if_busy: "fail" })));
      await Promise.all(rs.map((r) => b1.call("release", { lease: r.lease })));
    },
    hold: b1.take("bh", false),
    wait: b2.take("bh", true),
  });

  const r1 = new Redis(url);
  const r2 = new Redis(url);
  closers.push(() => r1.disconnect(), () => r2.disconnect());
  const sem = (r: Redis, key: string): Take => async () => {
    const s = new Semaphore(r, key, 1, { acquireTimeout: 30_000 });
    await s.acquire();
    return () => s.release();
  };
  row("redis-semaphore", {
    pair: sem(r1, "sem-p"),
    many: async (n) => {
      const ss = Array.from({ length: n }, (_, i) => new Semaphore(r1, `sem-m${i}`, 1, { acquireTimeout: 30_000 }));
      await Promise.all(ss.map((s) => s.acquire()));
      await Promise.all(ss.map((s) => s.release()));
    },
    hold: sem(r1, "sem-h"),
    wait: sem(r2, "sem-h"),
  });

  // Issue 44's local grant: a provider gate's pair and a slot's granted from
  // the bridge's capacity share (capacity: true; the release not waited
  // for), in turns with redis-semaphore's pair and the bare bridge's (an
  // acquire waited for, its release not).
  const cfg = join(mkdtempSync(join(tmpdir(), "govgate-")), "exec-defaults.yaml");
  writeFileSync(cfg, "providers:\n  bench: {max_concurrency: 512, capacity: true}\nresources:\n  hot: {limit: 512, capacity: true}\n", { mode: 0o600 });
  const gc = new Governor({ project, env, config: cfg });
  closers.push(() => gc.close());
  const gate = gc.provider("bench");
  const bc = new Bare(bin, project, env, ["--config", cfg]);
  closers.push(() => bc.close());
  await bc.call("hello", { protocol: 1, client: "bench", pid: process.pid });
  const semGate = sem(r1, "sem-g");
  const capacity: [string, () => Promise<void>, number[]][] = [
    ["provider gate (capacity)", () => gate.run(async () => undefined), []],
    ["slot (capacity)", () => gc.withSlot("hot", { wait: true }, async () => undefined), []],
    ["bridge, bare (capacity)", async () => bc.quiet("release", { lease: (await bc.call("acquire", { resources: ["hot"], if_busy: "wait" })).lease }), []],
    ["redis-semaphore", async () => (await semGate())(), []],
  ];
  for (const [, f] of capacity) for (let i = 0; i < 20; i++) await f(); // warm up

  for (const r of rows) for (let i = 0; i < 20; i++) await (await r.pair())(); // warm up
  for (let i = 0; i < Math.max(1, Math.round(seconds / burst)); i++) {
    for (const r of rows) await burstOf(async () => (await (await r.pair())(), 1), r.pairs, r.cpu);
    for (const r of rows) if (r.many) await burstOf(async () => (await r.many!(parallel), parallel), r.manyPairs);
  }
  for (let i = 0; i < Math.max(1, Math.round(seconds / burst)); i++)
    for (const [, f, r] of capacity) await burstOf(async () => (await f(), 1), r);
  // The pipes and the bridge's dispatch alone: a request that touches no backend.
  const noop: number[] = [];
  for (let i = 0; i < Math.max(1, Math.round(seconds / burst)); i++)
    await burstOf(async () => (await b1.call("cancel_request", { request: 1 << 30 }), 1), noop);
  for (let i = 0; i < rounds; i++) for (const r of [...rows, oneBridge]) await handoff(r);

  const med = (a: number[]) => q(a, 0.5);
  const spread = (a: number[]) => `${Math.min(...a).toFixed(0)}-${Math.max(...a).toFixed(0)}`;
  console.log(`redis-server on ${url}; ${seconds} s of pairs per subject in ${burst} s turns; ${rounds} hand-offs each; ${parallel} in parallel`);
  console.log(`${"".padEnd(20)} ${"pairs/s (turns' spread)".padEnd(24)} ${"node CPU/pair".padEnd(14)} ${`${parallel} at once, pairs/s`.padEnd(24)} hand-off p50  p99`);
  for (const r of rows) {
    const pairs = `${med(r.pairs).toFixed(0)} (${spread(r.pairs)})`;
    const many = r.manyPairs.length ? `${med(r.manyPairs).toFixed(0)} (${spread(r.manyPairs)})` : "-";
    console.log(
      `${r.name.padEnd(20)} ${pairs.padEnd(24)} ${`${med(r.cpu).toFixed(0)} us`.padEnd(14)} ${many.padEnd(24)} ${med(r.hand).toFixed(2)} ms  ${q(r.hand, 0.99).toFixed(2)} ms`,
    );
  }
  const [gov, sem_] = [rows[0], rows[rows.length - 1]];
  const bare = rows[rows.length - 2];
  console.log(
    `ratio governor/redis-semaphore: pairs/s ${(med(gov.pairs) / med(sem_.pairs)).toFixed(2)}x, ` +
      `${parallel} at once ${(med(gov.manyPairs) / med(sem_.manyPairs)).toFixed(2)}x, hand-off p50 ${(med(sem_.hand) / med(gov.hand)).toFixed(1)}x faster; ` +
      `bare bridge/redis-semaphore ${(med(bare.pairs) / med(sem_.pairs)).toFixed(2)}x; governor/bare bridge ${(med(gov.pairs) / med(bare.pairs)).toFixed(2)}x, ` +
      `${parallel} at once ${(med(gov.manyPairs) / med(bare.manyPairs)).toFixed(2)}x`,
  );
  console.log(`governor hand-off within one bridge (holder and waiter on one Governor): p50 ${med(oneBridge.hand).toFixed(2)} ms  p99 ${q(oneBridge.hand, 0.99).toFixed(2)} ms`);
  console.log(`bare bridge round trip with no backend (cancel_request): ${(1e6 / med(noop)).toFixed(0)} us (${spread(noop.map((n) => 1e6 / n))}); a pair is 2 round trips`);
  const semCap = med(capacity[capacity.length - 1][2]);
  console.log(`capacity (issue 44's local grant), pairs/s, in turns:`);
  for (const [name, , r] of capacity) console.log(`  ${name.padEnd(26)} ${med(r).toFixed(0).padStart(6)} (${spread(r)})  ${(med(r) / semCap).toFixed(2)}x redis-semaphore`);
  if (against) console.log(`governor/against: pairs/s ${(med(gov.pairs) / med(rows[1].pairs)).toFixed(2)}x, node CPU per pair ${(med(gov.cpu) / med(rows[1].cpu)).toFixed(2)}x`);
  console.log(`node rss ${(process.memoryUsage().rss / 1048576).toFixed(0)} MiB`);
} finally {
  for (const c of closers) await c();
  await backend.stop();
}
