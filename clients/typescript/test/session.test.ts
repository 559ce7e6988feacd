// The bridge's process: a session of its own (a Ctrl-C in the terminal
// reaches the client alone, which ends its bridge in order), and closed,
// not killed, when the client exits: what it held is released at once.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { Governor } from "../src/index.js";
import { cli, fileBackend, governorBin, here, tmp } from "./helpers.js";

const backend = fileBackend();
const linux = process.platform === "linux";
/** The session id of pid (/proc/PID/stat's sixth field, after the command's closing parenthesis). */
const sid = (pid: number | "self") => Number(readFileSync(`/proc/${pid}/stat`, "latin1").split(") ")[1].split(" ")[3]);

test("the bridge has a session of its own", { skip: !linux && "reads /proc/PID/stat" }, async () => {
  const gov = new Governor({ bin: governorBin(), env: { ...process.env, ...backend.env } });
  after(() => gov.close());
  await gov.slots();
  const pid = gov.bridgeProcess!.pid!;
  assert.notEqual(sid(pid), sid("self"));
  assert.equal(sid(pid), pid);
});

test("a client that exits holding a slot has its bridge release it, at once", async () => {
  const script = join(tmp(), "hold.mjs");
  writeFileSync(
    script,
    `import { Governor } from ${JSON.stringify(join(here, "..", "src", "index.js"))};\n` +
      `const g = new Governor();\n` +
      `await g.acquire("held-at-exit", { limit: 1, ttl: "10m" });\n` +
      `process.exit(0);\n`,
  );
  const env = { ...process.env, ...backend.env, GOVERNOR_BIN: governorBin() };
  const r = spawnSync(process.execPath, [script], { env, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  // Released by the bridge in order (stdin's end), not left to its 10 minute TTL.
  const deadline = Date.now() + 30_000;
  for (;;) {
    const out = JSON.parse((await cli(backend.env, "slots", "--json", "held-at-exit")).stdout);
    const holders = out.resources.flatMap((x: { holders: unknown[] }) => x.holders);
    if (holders.length === 0) break;
    assert.ok(Date.now() < deadline, `still held: ${JSON.stringify(holders)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
});
