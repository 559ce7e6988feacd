// examples/agent-gate (issue 33): the gate refuses the call that would not
// fit the spend budget, before it is made; what ran stays within the limit.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import { backends, here, project, tmp } from "./helpers.js";

const all = await backends();
after(async () => {
  for (const b of all) await b.stop();
});

const agent = join(here, "..", "examples", "agent-gate", "agent.js");
// The example's exec-defaults.yaml, written here: the suite also runs from
// an empty project that holds only the compiled tests and examples.
const config = join(tmp("gov-cfg-"), "exec-defaults.yaml");
writeFileSync(config, "providers:\n  llm: {max_concurrency: 2}\n", { mode: 0o600 });

async function run(env: Record<string, string>) {
  const { stdout } = await promisify(execFile)(process.execPath, [agent], { env: { ...process.env, CONFIG: config, ...env } });
  return stdout;
}

for (const b of all) {
  test(`agent-gate on the ${b.name} backend refuses the call that would not fit`, async () => {
    const env = { ...b.env, GOVERNOR_PROJECT: project(), BUDGET: "0.2" };
    const out = await run(env);
    const costs = [...out.matchAll(/^step \d+ cost ([\d.e-]+)$/gm)].map((m) => Number(m[1]));
    const refused = out.match(/^refused step (\d+): estimate ([\d.]+) USD would not fit: budget agent-hour spent ([\d.]+), reserved ([\d.]+), limit 0.2 USD; resets at \S+$/m);
    assert.ok(costs.length > 0 && refused, out);
    const [estimate, spent, reserved] = [Number(refused[2]), Number(refused[3]), Number(refused[4])];
    assert.equal(Number(refused[1]), costs.length + 1, "the refused call is the next one; none ran after it");
    assert.ok(spent + reserved + estimate > 0.2, `the refused estimate ${estimate} fits beside ${spent}: ${out}`);
    const total = costs.reduce((a, c) => a + c, 0);
    assert.ok(total <= 0.2 + 1e-9 && Math.abs(spent - total) < 1e-9, `spent ${spent}, the steps' costs ${total}`);
    // A second agent in the same hour runs only what still fits: the budget is the fleet's.
    const again = await run(env);
    const more = [...again.matchAll(/^step \d+ cost ([\d.e-]+)$/gm)].reduce((a, m) => a + Number(m[1]), 0);
    const spentBoth = Number(again.match(/^refused step \d+: .* spent ([\d.]+),/m)?.[1]);
    assert.ok(Math.abs(spentBoth - (total + more)) < 1e-9 && spentBoth <= 0.2 + 1e-9, again);
  });
}
