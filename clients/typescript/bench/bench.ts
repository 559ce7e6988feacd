// Side by side, on one redis-server this script starts: acquire+release
// pairs/s and hand-off latency (release -> the next waiter holds) of
// governor's client (through its bridge) and of redis-semaphore (on ioredis).
//   cd clients/typescript && npm ci && npm run build && GOVERNOR_BIN=/tmp/governor node dist/bench/bench.js [SECONDS]
import { Redis } from "ioredis";
import { Semaphore } from "redis-semaphore";
import { Governor } from "../src/index.js";
import { redisBackend } from "../test/helpers.js";

const seconds = Number(process.argv[2] ?? "3");
const rounds = 200;

async function pairsPerSecond(acquire: () => Promise<() => Promise<void>>): Promise<number> {
  for (let i = 0; i < 20; i++) await (await acquire())(); // warm up
  const end = performance.now() + seconds * 1000;
  let n = 0;
  const start = performance.now();
  while (performance.now() < end) {
    await (await acquire())();
    n++;
  }
  return n / ((performance.now() - start) / 1000);
}

/** Hand-off: A holds, B waits; the time from A's release call to B holding. */
async function handoff(hold: () => Promise<() => Promise<void>>, wait: () => Promise<() => Promise<void>>): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const release = await hold();
    const granted = wait().then((rel) => ({ at: performance.now(), rel }));
    await new Promise((r) => setTimeout(r, 5)); // B is waiting
    const t0 = performance.now();
    await release();
    const { at, rel } = await granted;
    ms.push(at - t0);
    await rel();
  }
  return ms.sort((a, b) => a - b);
}

const p = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

const backend = (await redisBackend())!;
if (!backend) throw new Error("redis-server not found on PATH");
const url = backend.env.GOVERNOR_REDIS_URL;
try {
  const project = `bench-${process.pid}`;
  const g1 = new Governor({ redisUrl: url, project, env: { ...process.env, GOVERNOR_BACKEND: "redis" } });
  const g2 = new Governor({ redisUrl: url, project, env: { ...process.env, GOVERNOR_BACKEND: "redis" } });
  const gov = (g: Governor, wait: boolean) => async () => {
    const l = await g.acquire("bench", { limit: 1, wait });
    return () => l.release();
  };
  const r1 = new Redis(url);
  const r2 = new Redis(url);
  const sem = (r: Redis) => async () => {
    const s = new Semaphore(r, "bench-sem", 1, { acquireTimeout: 30_000 });
    await s.acquire();
    return () => s.release();
  };

  const govPairs = await pairsPerSecond(gov(g1, false));
  const semPairs = await pairsPerSecond(sem(r1));
  const govHand = await handoff(gov(g1, false), gov(g2, true));
  const semHand = await handoff(sem(r1), sem(r2));
  const mem = process.memoryUsage().rss;

  const row = (name: string, pairs: number, hand: number[]) =>
    `${name.padEnd(16)} ${pairs.toFixed(0).padStart(8)} pairs/s   hand-off p50 ${p(hand, 0.5).toFixed(2)} ms  p99 ${p(hand, 0.99).toFixed(2)} ms`;
  console.log(`redis-server on ${url}, ${seconds} s of pairs each, ${rounds} hand-offs each`);
  console.log(row("governor", govPairs, govHand));
  console.log(row("redis-semaphore", semPairs, semHand));
  console.log(`ratio governor/redis-semaphore: pairs/s ${(govPairs / semPairs).toFixed(2)}x, hand-off p50 ${(p(semHand, 0.5) / p(govHand, 0.5)).toFixed(1)}x faster`);
  console.log(`node rss ${(mem / 1048576).toFixed(0)} MiB`);
  await g1.close();
  await g2.close();
  r1.disconnect();
  r2.disconnect();
} finally {
  await backend.stop();
}
