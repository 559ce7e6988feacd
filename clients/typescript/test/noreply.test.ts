// Releases not waited for: the bridge keeps the order, and a failure is
// thrown by the client's next call (which does not run) or by close.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { Governor, GovernorError, type Lease } from "../src/index.js";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileBackend, governorBin, tmp } from "./helpers.js";

const backend = fileBackend();
const gov = () => new Governor({ bin: governorBin(), env: { ...process.env, ...backend.env } });

/** A lease the bridge no longer knows (released by a request of its own): its release fails. */
async function releasedBehindItsBack(g: Governor): Promise<Lease> {
  const lease = await g.acquire("r", { limit: 1 });
  await g.call("release", { lease: lease.id });
  return lease;
}

/** Run release while the bridge is stopped (it answers nothing until continued): it must resolve all the same. */
async function stopped(g: Governor, release: () => Promise<void>): Promise<void> {
  const pid = g.bridgeProcess!.pid!;
  process.kill(pid, "SIGSTOP");
  let released = false;
  try {
    // Generous: a release that waits for the stopped bridge never resolves.
    await Promise.race([release().then(() => (released = true)), new Promise((r) => setTimeout(r, 60_000).unref())]);
  } finally {
    process.kill(pid, "SIGCONT");
  }
  assert.ok(released, "the release waited for the stopped bridge's reply");
}

test("a grant from the capacity share is released without waiting", async () => {
  const config = join(tmp("gov-cfg-"), "exec-defaults.yaml");
  writeFileSync(config, "resources:\n  hot: {limit: 4, capacity: true}\n", { mode: 0o600 });
  const g = new Governor({ bin: governorBin(), config, env: { ...process.env, ...backend.env } });
  after(() => g.close());
  const lease = await g.acquire("hot", { wait: true });
  assert.equal(lease.token, 0); // from the share
  await stopped(g, () => lease.release());
  // Each release ran before the next acquire: the share's slot is free again.
  for (let i = 0; i < 3; i++) await (await g.acquire("hot")).release();
});

test("a release not waited for frees the slot for the next acquire", async () => {
  const g = gov();
  after(() => g.close());
  const lease = await g.acquire("solo", { limit: 1 });
  await stopped(g, () => lease.release({ wait: false }));
  // In the pipe's order: the release ran first, the slot is free for an acquire that does not wait.
  await (await g.acquire("solo", { limit: 1 })).release();
});

test("a failed release is thrown by the next call, which does not run", async () => {
  const g = gov();
  after(() => g.close());
  const lease = await releasedBehindItsBack(g);
  await lease.release({ wait: false }); // not waited for: its failure is owed
  await assert.rejects(g.acquire("other", { limit: 1 }), (e: unknown) => {
    assert.ok(e instanceof GovernorError, String(e));
    assert.match(e.message, new RegExp(`release of lease ${lease.id}.*unknown lease`));
    assert.match(e.message, /\(acquire\) was not run/);
    return true;
  });
  const other = (await g.slots("other")).resources.find((r) => r.resource === "other");
  assert.ok(!other || other.used === 0, "the refused acquire ran");
});

test("close throws what no call took", async () => {
  const g = gov();
  const lease = await releasedBehindItsBack(g);
  await lease.release({ wait: false });
  await assert.rejects(g.close(), new RegExp(`release of lease ${lease.id}`));
});

test("a lease of the backend waits, and throws at the release", async () => {
  const g = gov();
  after(() => g.close());
  const lease = await releasedBehindItsBack(g); // token > 0: other processes see its release
  await assert.rejects(lease.release(), /unknown lease/);
  await g.slots(); // nothing owed
});
