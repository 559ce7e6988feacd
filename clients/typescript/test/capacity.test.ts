// Capacity leases through the bridge: a resource the configuration opts in
// (capacity: true) is granted from each bridge's share, never more than its
// limit at once, with no client change.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Governor } from "../src/index.js";
import { fileBackend, governorBin, tmp } from "./helpers.js";

const backend = fileBackend();
const config = join(tmp("gov-cfg-"), "exec-defaults.yaml");
writeFileSync(config, "resources:\n  hot: {limit: 4, capacity: true, capacity_refresh: 1s}\n", { mode: 0o600 });

test("slots of a capacity: true resource come from the bridges' shares, never more than the limit", async () => {
  const govs = [0, 1].map(() => new Governor({ bin: governorBin(), config, env: { ...process.env, ...backend.env } }));
  after(async () => {
    for (const g of govs) await g.close();
  });
  let inUse = 0;
  let most = 0;
  let grants = 0;
  const tokens = new Set<number>();
  const ids = new Set<string>();
  const work = async (g: Governor) => {
    for (let i = 0; i < 20; i++) {
      const lease = await g.acquire("hot", { wait: true });
      inUse++;
      most = Math.max(most, inUse);
      grants++;
      tokens.add(lease.token);
      ids.add(lease.resources[0].lease_id);
      await new Promise((r) => setTimeout(r, 1));
      inUse--;
      await lease.release();
    }
  };
  await Promise.all(govs.flatMap((g) => [work(g), work(g), work(g)]));
  assert.equal(grants, 120);
  assert.ok(most <= 4, `${most} slots in use at once; limit 4`);
  // From the shares: no fencing token, one capacity lease per bridge names
  // every grant, and the slots view holds only those shares.
  assert.deepEqual([...tokens], [0]);
  assert.ok(ids.size <= 2, `lease ids ${[...ids]}`);
  const r = (await govs[0].slots("hot")).resources[0];
  assert.ok(r.used <= 4);
  for (const h of r.holders) assert.ok(ids.has(h.lease_id), `holder ${h.lease_id} is not a share`);
});
