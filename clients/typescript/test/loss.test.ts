// Redis lost its data (FLUSHALL, a restart without persistence) while a
// client process held a slot and a budget reservation: a new client
// process of the same machine, with a bridge of its own that never saw the
// resource or the budget, is refused the slot (the resource quarantined)
// and the spend (the budget held), as docs/redis.md and docs/budgets.md
// say. The evidence is the machine's witness under the state directory
// (GOVERNOR_DIR), which the holder's bridge wrote and the newcomer's reads.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Governor, type Budget } from "../src/index.js";
import { project, redisBackend, tmp, Worker, type RedisBackend } from "./helpers.js";

const budget: Budget = { name: "evals-day", limit: 1, unit: "USD", per: "24h" };
const losses: [string, (r: RedisBackend) => Promise<void>][] = [
  ["FLUSHALL", async (r) => assert.equal(await r.command("FLUSHALL"), "+OK")],
  ["a restart without persistence", (r) => r.restart()],
];

for (const [loss, lose] of losses) {
  test(`after ${loss}, a new client process is refused the slot and the spend beside the holder of the lost state`, async (t) => {
    const r = await redisBackend();
    if (!r) return t.skip("no redis-server");
    const dir = tmp("govts-loss-");
    const state = join(dir, "state"); // the machine's state dir: its witness
    const env = { ...r.env, GOVERNOR_DIR: state };
    // The holder renews far later than the test runs: only the witness
    // can tell the newcomer that the data was lost.
    const config = join(dir, "exec-defaults.yaml");
    writeFileSync(config, "lease:\n  ttl: 300s\n  heartbeat: 200s\n", { mode: 0o600 });
    const proj = project();
    const g = new Governor({ env: { ...process.env, ...env }, project: proj, config });
    try {
      const lease = await g.acquire("heavy", { limit: 1, budgets: [budget], estimate: 0.6 });
      assert.deepEqual(lease.budgets.map((b) => [b.name, b.reserved]), [["evals-day", 0.6]]);
      assert.ok(readdirSync(state).some((n) => n.startsWith("redis-witness-")), readdirSync(state).join(" "));
      await lose(r);
      const newcomer = async (res: string, estimate?: string): Promise<string> => {
        const w = new Worker({ ...env, PROJECT: proj, MODE: "try", RES: res, BUDGET: JSON.stringify(budget), ...(estimate ? { ESTIMATE: estimate } : {}) });
        const line = await w.line("", 60_000);
        assert.equal(await w.exited, 0, line);
        return line;
      };
      const slot = await newcomer("heavy");
      assert.match(slot, /^refused Busy 73 - .*quarantined/, "a new process beside the holder of the lost state");
      const spend = await newcomer("other", "0.3");
      assert.match(spend, /^refused Busy 73 held .*lost data/, "the wiped budget handed out again");
      assert.equal(lease.lost, false, "the holder learnt of the loss itself: the test would not need the witness");
      // The holder's own settle counts on the held budget; it stays held.
      await lease.settle(0.5);
      assert.match(await newcomer("other", "0.3"), /^refused Busy 73 held budget evals-day held: spent 0.5 USD/);
    } finally {
      await g.close();
      await r.stop();
    }
  });
}
