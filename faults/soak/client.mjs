// The soak's TypeScript client: 50 promises at once, each taking the slot
// "shared" and working in 20 ms chunks appended to a span file
// (CLOCK_MONOTONIC ns, process.hrtime), stopping when its lease is lost;
// then again, until 30 s pass without a grant. Run by faults/soak; argv:
// INDEX_JS SPANDIR WHO.
import { appendFileSync } from "node:fs";
import { join } from "node:path";

const [indexJs, spans, who] = process.argv.slice(2);
const { Governor } = await import(indexJs);
const gov = new Governor({ config: process.env.CFG });
let lastGrant = Date.now();
const file = join(spans, `shared-${who}.spans`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function one(n) {
  const name = `${who}.p${n}`;
  let lease;
  try {
    lease = await gov.acquire("shared", { wait: true, waitTimeout: "20s" });
  } catch {
    await sleep(100);
    return;
  }
  lastGrant = Date.now();
  try {
    const chunks = 2 + Math.floor(Math.random() * 20);
    for (let i = 0; i < chunks && !lease.lost; i++) {
      const start = process.hrtime.bigint();
      await sleep(20);
      appendFileSync(file, `${name} ${start} ${process.hrtime.bigint()}\n`);
    }
  } finally {
    await lease.release().catch(() => {});
  }
}

while (Date.now() - lastGrant < 30000) {
  await Promise.all(Array.from({ length: 50 }, (_, n) => one(n)));
}
process.exit(3);
