// A client process for the tests, driven by its environment:
//   MODE=churn  N times: acquire RES (limit 1, wait), write S/E lines to OUT around HOLD_MS; print "served N".
//   MODE=hold   acquire RES, print "held TOKEN BRIDGE_PID HANDLE", run a body writing T lines to OUT
//               until lease.signal aborts, then write E and print "stopped KIND".
//   MODE=provider-429  run one call through provider PROVIDER returning a 429 with retry-after RETRY; print "reported".
//   MODE=provider-try  run one call through provider PROVIDER without waiting; print "ran" or "refused CODE MESSAGE".
//   MODE=nested  acquire RES (limit 1, no wait); print "nested NESTED TOKEN" of its resource.
//   MODE=try     acquire RES (limit 1, no wait), reserving ESTIMATE on the budget BUDGET (JSON) when given;
//               print "granted TOKEN" or "refused CLASS CODE REASON MESSAGE" (REASON: the budget's, else -), and release.
// Every mode prints "fail CLASS CODE MESSAGE" on an unexpected error and exits 3.
import { appendFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { Governor, GovernorError } from "../src/index.js";

const env = process.env;
const gov = new Governor({ config: env.CONFIG, project: env.PROJECT });
const out = env.OUT ?? "/dev/null";
const who = env.WHO ?? String(process.pid);
const res = env.RES ?? "t";
const mono = () => process.hrtime.bigint();
const mark = (line: string) => appendFileSync(out, line + "\n");

async function churn(): Promise<void> {
  const n = Number(env.N ?? "10");
  const hold = Number(env.HOLD_MS ?? "5");
  for (let i = 0; i < n; i++) {
    await gov.withSlot(res, { limit: 1, wait: true, ttl: env.TTL }, async (lease) => {
      mark(`S ${who} ${mono()} ${lease.token}`);
      await sleep(hold * (0.5 + Math.random()));
      mark(`E ${who} ${mono()}`);
    });
  }
  console.log(`served ${n}`);
}

async function hold(): Promise<void> {
  await using lease = await gov.acquire(res, { limit: 1, wait: true, ttl: env.TTL });
  mark(`S ${who} ${mono()} ${lease.token}`);
  console.log(`held ${lease.token} ${gov.bridgeProcess?.pid} ${lease.handle}`);
  // The body: works in small steps, and stops at the first step after the loss.
  while (!lease.signal.aborted) {
    mark(`T ${who} ${mono()}`);
    await sleep(10, undefined, { signal: lease.signal }).catch(() => {});
  }
  mark(`E ${who} ${mono()}`);
  const reason = lease.signal.reason as GovernorError;
  console.log(`stopped ${reason.kind} ${reason.message}`);
  process.exit(0);
}

async function provider429(): Promise<void> {
  const r = await gov.provider(env.PROVIDER!).run(async () => new Response("slow down", { status: 429, headers: { "retry-after": env.RETRY ?? "30" } }));
  console.log(`reported ${r.status}`);
}

async function providerTry(): Promise<void> {
  try {
    await gov.provider(env.PROVIDER!).run(async () => "ok", { wait: false });
    console.log("ran");
  } catch (err) {
    if (!(err instanceof GovernorError)) throw err;
    console.log(`refused ${err.constructor.name} ${err.code} ${err.message}`);
  }
}

async function nested(): Promise<void> {
  await using lease = await gov.acquire(res, { limit: 1, wait: false });
  console.log(`nested ${lease.resources[0].nested} ${lease.token}`);
}

async function tryOnce(): Promise<void> {
  const spend = env.ESTIMATE ? { budgets: [JSON.parse(env.BUDGET!)], estimate: Number(env.ESTIMATE) } : {};
  try {
    await using lease = await gov.acquire(res, { limit: 1, wait: false, ...spend });
    console.log(`granted ${lease.token}`);
  } catch (err) {
    if (!(err instanceof GovernorError)) throw err;
    console.log(`refused ${err.constructor.name} ${err.code} ${err.budget?.reason ?? "-"} ${err.message}`);
  }
}

const modes: Record<string, () => Promise<void>> = { churn, hold, nested, try: tryOnce, "provider-429": provider429, "provider-try": providerTry };
try {
  const run = modes[env.MODE ?? ""];
  if (!run) throw new Error(`MODE=${env.MODE}: want ${Object.keys(modes).join(", ")}`);
  await run();
  await gov.close();
} catch (err) {
  const e = err as GovernorError;
  console.log(`fail ${e?.constructor?.name} ${e?.code} ${e?.message}`);
  process.exit(3);
}
