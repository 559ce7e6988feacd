// An exec runner (seed 004, PJR-4HBG): `runner --shareable ITEM` starts a run
// that accepts joiners; `runner --join ITEM` starts beside it instead of
// waiting for its end; a plain `runner ITEM` stays exclusive (Busy, exit 73,
// beside any run). Inside, every agent call goes through the provider gate
// (max_concurrency counted across processes) and the integration step
// through a cross-process mutex.
//
// OUT (optional) receives work intervals: "S KIND WHO MONO" / "E KIND WHO MONO"
// for KIND run, agent and lifecycle. WAIT_FOR (optional): a file to wait for
// before the integration step.
import { appendFileSync, existsSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { Governor, GovernorError, type Lease } from "../../src/index.js";

const args = process.argv.slice(2);
const join = args.includes("--join");
const shareable = args.includes("--shareable");
const item = args.find((a) => !a.startsWith("--")) ?? "item";
const steps = Number(process.env.STEPS ?? "3");
const out = process.env.OUT;
const mono = () => process.hrtime.bigint();
const mark = (kind: string, what: "S" | "E") => out && appendFileSync(out, `${what} ${kind} ${item} ${mono()}\n`);

async function span<T>(kind: string, fn: () => Promise<T>): Promise<T> {
  mark(kind, "S");
  try {
    return await fn();
  } finally {
    mark(kind, "E");
  }
}

/** One agent call: a stand-in for fetch(url, {signal}) that returns a Response. */
async function callAgent(lease: Lease, step: number): Promise<Response> {
  await sleep(30, undefined, { signal: lease.signal });
  return new Response(JSON.stringify({ item, step }), { status: 200 });
}

const gov = new Governor({ config: process.env.CONFIG });
try {
  await using run = await gov.execRun({ join, shareable, ifBusy: process.env.IF_BUSY as "fail" | undefined });
  console.log(`running ${item}${join ? " (joined)" : shareable ? " (shareable)" : ""}`);
  await span("run", async () => {
    for (let step = 1; step <= steps; step++) {
      await gov.provider("agent").run((lease) => span("agent", () => callAgent(lease, step)), { signal: run.signal });
    }
    // (For the test: stay running until WAIT_FOR exists, as a long item would.)
    while (process.env.WAIT_FOR && !existsSync(process.env.WAIT_FOR)) await sleep(20, undefined, { signal: run.signal });
    // The integration step (register transition, merge, view regeneration): one run at a time.
    await gov.withSlot("exec-lifecycle", { wait: true, signal: run.signal }, () => span("lifecycle", () => sleep(20)));
  });
  console.log(`done ${item}`);
} catch (err) {
  if (!(err instanceof GovernorError)) throw err;
  console.log(`refused ${item}: ${err.message}`);
  process.exitCode = err.code;
} finally {
  await gov.close();
}
