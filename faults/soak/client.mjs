// The soak's TypeScript client: 50 promises at once, each taking the slot
// "shared" (one in five the leased provider gate's "provider:fake") and working in 20 ms chunks appended to a span file
// (CLOCK_MONOTONIC ns, process.hrtime), stopping the moment its lease is lost;
// then again, until 30 s pass without a grant; beside them, the provider
// gate "budgeted", charged (budgetLoop). Run by faults/soak; argv:
// INDEX_JS SPANDIR WHO.
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";

const [indexJs, spans, who] = process.argv.slice(2);
const { Governor } = await import(indexJs);
const gov = new Governor({ config: process.env.CFG });
let lastGrant = Date.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function one(n) {
  const name = `${who}.p${n}`;
  const res = n % 5 === 0 ? "provider:fake" : "shared";
  const file = join(spans, `${res}-${who}.spans`);
  let lease;
  try {
    lease = await gov.acquire(res, { wait: true, waitTimeout: "20s" });
  } catch {
    await sleep(100);
    return;
  }
  lastGrant = Date.now();
  try {
    const chunks = 2 + Math.floor(Math.random() * 20);
    for (let i = 0; i < chunks && !lease.lost; i++) {
      // A chunk stops the moment the lease is lost, as a user's fetch
      // given lease.signal does (a plain sleep worked on past a loss).
      const start = process.hrtime.bigint();
      const lost = await delay(20, false, { signal: lease.signal }).catch(() => true);
      appendFileSync(file, `${name} ${start} ${process.hrtime.bigint()}\n`);
      if (lost) break;
    }
  } finally {
    await lease.release().catch(() => {});
  }
}

// The provider gate "budgeted" with an estimate of 1 USD (the soak's
// budget loops, budget.go): each admitted call logs its start (wall
// clock, ns) before its work.
async function budgetLoop() {
  const gate = gov.provider("budgeted");
  for (;;) {
    try {
      await gate.run(async () => {
        appendFileSync(process.env.SOAK_BUDGET_LOG, `${BigInt(Date.now()) * 1000000n}\n`);
        await sleep(200);
      }, { estimate: 1, wait: false });
    } catch {
      // refused (exhausted, held) or lost: the next call tries again
    }
    await sleep(300 + Math.random() * 300);
  }
}

budgetLoop();
while (Date.now() - lastGrant < 30000) {
  await Promise.all(Array.from({ length: 50 }, (_, n) => one(n)));
}
process.exit(3);
