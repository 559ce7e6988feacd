// withSlot(..., { record: PATH }) on every path: the destination is checked
// before the slot is asked for (as governor run --record does), an acquire's
// own error is never hidden by the record's, and no path leaves a slot held.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, symlinkSync, writeFileSync, chmodSync } from "node:fs";
import { join } from "node:path";
import { Busy, Governor, GovernorError } from "../src/index.js";
import { WaitRecord } from "../src/record.js";
import { cli, fileBackend, governorBin, root, tmp } from "./helpers.js";

const backend = fileBackend();
const govs: Governor[] = [];
after(async () => {
  for (const g of govs) await g.close();
});

function gov(): Governor {
  const g = new Governor({ bin: governorBin(), env: { ...process.env, ...backend.env } });
  govs.push(g);
  return g;
}

async function held(g: Governor, resource: string): Promise<number> {
  const r = await g.slots(resource);
  return r.resources.reduce((n, x) => n + x.holders.length, 0);
}

const lines = (path: string) => readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l));

/** Makes every record line's write throw, for fn. */
async function failingWrites<T>(fn: () => Promise<T>): Promise<T> {
  const proto = WaitRecord.prototype as unknown as { write: unknown };
  const write = proto.write;
  proto.write = () => {
    throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
  };
  try {
    return await fn();
  } finally {
    proto.write = write;
  }
}

test("a record into a folder that does not exist is refused before the slot is asked for", async () => {
  const g = gov();
  const rec = join(tmp(), "runs", "meta.jsonl");
  await assert.rejects(
    g.withSlot("rm", { limit: 1, record: rec }, () => assert.fail("the body ran")),
    (e: unknown) => {
      assert.ok(e instanceof GovernorError && e.constructor === GovernorError, String(e));
      assert.equal(e.code, 125);
      assert.match(e.message, /does not exist/);
      assert.ok(e.message.includes(rec), e.message);
      return true;
    },
  );
  assert.equal(await held(g, "rm"), 0, "the refused slot is held");
  assert.equal(await g.withSlot("rm", { limit: 1 }, (l) => l.token > 0), true); // a second slot in the same process
});

test("a record that is no regular file, or that others can write, is refused", async () => {
  const g = gov();
  const dir = tmp();
  symlinkSync(join(dir, "elsewhere"), join(dir, "link"));
  const shared = join(dir, "shared.jsonl");
  writeFileSync(shared, "");
  chmodSync(shared, 0o666);
  for (const [path, what] of [[dir, /a directory/], ["/dev/null", /a device/], [join(dir, "link"), /symbolic link/], [shared, /writable by group or others/]] as const) {
    await assert.rejects(g.withSlot("rf", { limit: 1, record: path }, () => assert.fail("the body ran")), what);
  }
  assert.equal(await held(g, "rf"), 0);
});

test("a record gets a grant and an end line, with the fields of governor run --record's", async () => {
  const g = gov();
  const dir = tmp();
  const rec = join(dir, "waits.jsonl");
  const token = await g.withSlot("rc", { limit: 1, record: rec }, (l) => l.token);
  const mine = lines(rec);
  assert.deepEqual(mine.map((l) => [l.kind, l.outcome]), [["grant", undefined], ["end", "ran"]]);
  assert.equal(mine[0].resources[0].token, token);
  const theirs = join(dir, "cli.jsonl");
  await cli(backend.env, "run", "--record", theirs, "--resource", "rc", "--limit", "1", "--", "true");
  const cliLines = lines(theirs);
  for (let i = 0; i < 2; i++) assert.deepEqual(Object.keys(mine[i]).sort(), Object.keys(cliLines[i]).sort());
  const strip = (rs: Record<string, unknown>[]) => rs.map(({ lease: _l, token: _t, ...r }) => r);
  assert.deepEqual(strip(mine[0].resources), strip(cliLines[0].resources));
});

test("a failing acquire keeps its own error, and its end line says busy", async () => {
  const g = gov();
  const rec = join(tmp(), "busy.jsonl");
  await gov().withSlot("rb", { limit: 1 }, async () => {
    await assert.rejects(g.withSlot("rb", { limit: 1, record: rec }, () => assert.fail("the body ran")), Busy);
  });
  assert.deepEqual(lines(rec).map((l) => [l.kind, l.outcome, l.exit_code]), [["end", "busy", 73]]);
});

test("an end line that cannot be written does not hide the acquire's error", async () => {
  const g = gov();
  await gov().withSlot("re", { limit: 1 }, async () => {
    await failingWrites(() => assert.rejects(g.withSlot("re", { limit: 1, record: join(tmp(), "e.jsonl") }, () => assert.fail("the body ran")), Busy));
  });
});

test("a grant line that cannot be written releases the slot", async () => {
  const g = gov();
  await failingWrites(() => assert.rejects(g.withSlot("rg", { limit: 1, record: join(tmp(), "g.jsonl") }, () => assert.fail("the body ran")), /ENOSPC/));
  assert.equal(await held(g, "rg"), 0, "the slot whose grant line failed is held");
});

test("a body's error is the one thrown, after its end line", async () => {
  const g = gov();
  const rec = join(tmp(), "body.jsonl");
  await assert.rejects(g.withSlot("rx", { limit: 1, record: rec }, () => {
    throw new Error("the body's");
  }), /the body's/);
  assert.deepEqual(lines(rec).map((l) => [l.kind, l.outcome, l.exit_code]), [["grant", undefined, undefined], ["end", "ran", 1]]);
  assert.equal(await held(g, "rx"), 0);
  assert.ok(!existsSync(join(tmp(), "runs")));
});

// The record's command line is the process's, shown as governor run --record
// shows it: every case of the fixture Go's redaction test and the Python
// client read (in the repository; CI's run against the installed package
// names it by GOVERNOR_REDACTION_CASES).
const redaction = process.env.GOVERNOR_REDACTION_CASES || join(root, "..", "..", "governor", "testdata", "redaction.json");
if (process.env.CI && !existsSync(redaction)) throw new Error(`${redaction} is not here (set GOVERNOR_REDACTION_CASES): CI runs these cases, never skips them`);

test("the record's command is redacted as the CLI does (governor/testdata/redaction.json)", { skip: !existsSync(redaction) }, async () => {
  const cases: { args: string[]; shown: string }[] = JSON.parse(readFileSync(redaction, "utf8")).cases;
  assert.ok(cases.length > 0);
  const g = gov();
  const rec = join(tmp(), "meta.jsonl");
  const argv = process.argv;
  try {
    for (const c of cases) {
      process.argv = c.args;
      await g.withSlot("rc", { limit: 1, record: rec }, async () => {});
    }
  } finally {
    process.argv = argv;
  }
  const got = lines(rec);
  assert.equal(got.length, 2 * cases.length);
  cases.forEach((c, i) => {
    assert.deepEqual([got[2 * i].kind, got[2 * i + 1].kind], ["grant", "end"]);
    assert.equal(got[2 * i].command, c.shown, JSON.stringify(c.args));
    assert.equal(got[2 * i + 1].command, c.shown, JSON.stringify(c.args));
  });
});
