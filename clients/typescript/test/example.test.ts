// examples/exec-runner (seed 004): a run joins a shareable one and runs
// beside it; their agent calls never exceed the provider's max_concurrency
// across the two processes, their integration steps never overlap, and a
// plain run beside them is refused (73).
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { backends, here, root, tmp } from "./helpers.js";

const all = await backends();
after(async () => {
  for (const b of all) await b.stop();
});

const runner = join(here, "..", "examples", "exec-runner", "runner.js");
const config = join(root, "examples", "exec-runner", "exec-defaults.yaml");

function run(env: Record<string, string>, ...args: string[]) {
  const child = spawn(process.execPath, [runner, ...args], { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, CONFIG: config, ...env } });
  let text = "";
  const started = new Promise<void>((resolve) => child.stdout!.on("data", (d) => ((text += d), text.includes("running") || text.includes("refused") ? resolve() : undefined)));
  const done = new Promise<{ code: number | null; text: string }>((resolve) => child.on("exit", (code) => resolve({ code, text })));
  return { started, done };
}

/** "S KIND WHO MONO" / "E KIND WHO MONO" as intervals of kind. */
function spans(out: string, kind: string) {
  const open = new Map<string, bigint>();
  const done: { who: string; start: bigint; end: bigint }[] = [];
  for (const l of readFileSync(out, "utf8").split("\n")) {
    const [se, k, who, t] = l.split(" ");
    if (k !== kind) continue;
    if (se === "S") open.set(who, BigInt(t));
    else done.push({ who, start: open.get(who)!, end: BigInt(t) });
  }
  return done.sort((a, b) => (a.start < b.start ? -1 : 1));
}

for (const b of all) {
  test(`exec-runner on the ${b.name} backend: a joined run beside a shareable one, the provider gate across both`, async () => {
    const dir = tmp();
    const env = { ...b.env, GOVERNOR_PROJECT: `ex-${process.pid}-${b.name}`, OUT: join(dir, "work"), STEPS: "4", WAIT_FOR: join(dir, "go") };
    const first = run(env, "--shareable", "PJR-T3NN");
    await first.started;
    const joined = run(env, "--join", "PJR-00QV");
    await joined.started;
    const plain = await run(env, "PJR-PLAIN").done;
    writeFileSync(env.WAIT_FOR, "");
    const [a, j] = await Promise.all([first.done, joined.done]);
    assert.equal(a.code, 0, a.text);
    assert.equal(j.code, 0, j.text);
    assert.equal(plain.code, 73, `a plain run beside them: ${plain.text}`);
    const runs = spans(env.OUT, "run");
    assert.equal(runs.length, 2);
    assert.ok(runs[1].start < runs[0].end, "the joined run started before the shareable one ended");
    for (const kind of ["agent", "lifecycle"]) {
      const iv = spans(env.OUT, kind);
      for (let i = 1; i < iv.length; i++) assert.ok(iv[i].start >= iv[i - 1].end, `${kind}: ${iv[i].who} started while ${iv[i - 1].who} ran`);
    }
    assert.equal(spans(env.OUT, "agent").length, 8);
  });
}
