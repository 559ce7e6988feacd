// Spend budgets from TypeScript: reserved with the slot or the provider
// gate, settled after; usageFromJSON and Price as Go's (one shared fixture).
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Busy, Governor, GovernorError, Price, Skipped, usageFromJSON, type Budget, type Usage } from "../src/index.js";
import { backends, project, root, tmp } from "./helpers.js";

// The shared fixture lives in the repository (governor/testdata); a run
// against the installed package (CI's npm channel) names it by
// GOVERNOR_USAGE_SHAPES, and under CI it must be there.
const shapes = process.env.GOVERNOR_USAGE_SHAPES || join(root, "..", "..", "governor", "testdata", "usage-shapes.json");
if (process.env.CI && !existsSync(shapes)) throw new Error(`${shapes} is not here (set GOVERNOR_USAGE_SHAPES): CI runs these cases, never skips them`);
const camel = (u: { input_tokens: number; cached_input_tokens: number; output_tokens: number }): Usage =>
  ({ inputTokens: u.input_tokens, cachedInputTokens: u.cached_input_tokens, outputTokens: u.output_tokens });

test("usageFromJSON and Price read and cost as Go's (governor/testdata/usage-shapes.json)", { skip: !existsSync(shapes) }, () => {
  const f = JSON.parse(readFileSync(shapes, "utf8"));
  for (const c of f.usage) {
    const want = c.usage === null ? undefined : camel(c.usage);
    assert.deepEqual(usageFromJSON(c.body), want, c.name);
    assert.deepEqual(usageFromJSON(new TextEncoder().encode(c.body)), want, c.name);
  }
  for (const c of f.prices) {
    const p = c.price;
    assert.equal(new Price({ input: p.input, output: p.output, cachedInput: p.cached_input, perCall: p.per_call }).cost(camel(c.usage)), c.cost);
  }
  assert.deepEqual(usageFromJSON({ usage: { prompt_tokens: 3, completion_tokens: 4 } }), { inputTokens: 3, cachedInputTokens: 0, outputTokens: 4 });
  assert.equal(new Price({ input: 3, output: 15 }).estimate(1000, 4096), 0.06444);
  assert.throws(() => new Price({ output: -1 }), /price output -1/);
});

const all = await backends();
after(async () => {
  for (const b of all) await b.stop();
});

const day = (limit: number): Budget => ({ name: "evals-day", limit, unit: "USD", per: "24h" });

for (const b of all) {
  const gov = (config?: string) => new Governor({ env: { ...process.env, ...b.env }, project: project(), config });

  test(`budgets on the ${b.name} backend: reserved with the slot, refused by name, settled once`, async () => {
    const proj = project();
    const g = new Governor({ env: { ...process.env, ...b.env }, project: proj });
    const other = new Governor({ env: { ...process.env, ...b.env }, project: proj });
    try {
      const s = await g.acquire("b1", { limit: 1, budgets: [day(1)], estimate: 0.3 });
      assert.deepEqual(s.budgets.map((x) => [x.name, x.reserved, x.unit]), [["evals-day", 0.3, "USD"]]);
      await assert.rejects(other.acquire("b2", { limit: 1, budgets: [day(1)], estimate: 0.8 }), (e: unknown) => {
        assert.ok(e instanceof Busy, String(e));
        assert.equal(e.code, 73);
        assert.equal(e.budget?.name, "evals-day");
        assert.deepEqual([e.budget?.spent, e.budget?.reserved, e.budget?.limit, e.budget?.reason], [0, 0.3, 1, "exhausted"]);
        assert.ok(e.budget?.reset);
        return true;
      });
      await assert.rejects(other.acquire("b2", { limit: 1, budgets: [day(1)], estimate: 0.8, ifBusy: "skip" }), Skipped);
      assert.equal(await s.settle(0.1), true);
      assert.equal(await s.settle(0.5), false, "a second settle changes nothing");
      await s.release();
      await (await other.acquire("b2", { limit: 1, budgets: [day(1)], estimate: 0.8 })).release(); // unsettled: its estimate counts
      await assert.rejects(g.acquire("b3", { limit: 1, budgets: [day(1)], estimate: 0.2 }), (e: unknown) => {
        assert.ok(e instanceof Busy);
        assert.deepEqual([e.budget?.spent, e.budget?.reserved], [0.9, 0]);
        return true;
      });
    } finally {
      await g.close();
      await other.close();
    }
  });

  test(`a budget named on the ${b.name} backend: the configured one (budgets.NAME) is reserved, an unknown name refused`, async () => {
    const config = join(tmp("gov-cfg-"), "exec-defaults.yaml");
    writeFileSync(config, "budgets:\n  evals-day: {limit: 1, unit: USD, per: 24h}\n", { mode: 0o600 });
    const g = gov(config);
    try {
      const s = await g.acquire("n1", { limit: 1, budgets: ["evals-day"], estimate: 0.3 });
      assert.deepEqual(s.budgets.map((x) => [x.name, x.reserved, x.limit, x.unit]), [["evals-day", 0.3, 1, "USD"]]);
      await assert.rejects(g.acquire("n2", { limit: 1, budgets: ["evals-day"], estimate: 0.8 }), (e: unknown) => {
        assert.ok(e instanceof Busy, String(e));
        assert.deepEqual([e.budget?.name, e.budget?.reserved], ["evals-day", 0.3]);
        return true;
      });
      assert.equal(await s.settle(0.25), true);
      await s.release();
      await assert.rejects(g.acquire("n2", { limit: 1, budgets: ["nope"], estimate: 0.1 }), (e: unknown) => {
        assert.ok(e instanceof GovernorError && !(e instanceof Busy), String(e));
        assert.equal(e.code, 125);
        assert.match(e.message, /"nope".*evals-day/);
        return true;
      });
      await assert.rejects(g.acquire("n2", { limit: 1, budgets: [5 as unknown as string], estimate: 0.1 }), TypeError);
      // The refusal held nothing: the slot is free, the budget as the settle left it.
      const t = await g.acquire("n2", { limit: 1, ifBusy: "fail", budgets: ["evals-day"], estimate: 0.75 });
      assert.deepEqual(t.budgets.map((x) => [x.spent, x.reserved]), [[0.25, 0.75]]);
      await t.release();
    } finally {
      await g.close();
    }
  });

  test(`a disagreeing definition on the ${b.name} backend is refused naming both, reserving nothing`, async () => {
    // A budget's unit and window live with its state (docs/budgets.md, "The
    // definition is the state's"): an inline budget or a config that says
    // another is refused (125), naming the state's and its own.
    const proj = project();
    const config = join(tmp("gov-cfg-"), "exec-defaults.yaml");
    writeFileSync(config, "budgets:\n  evals-day: {limit: 1000, unit: USD, per: 1s}\n", { mode: 0o600 });
    const g = new Governor({ env: { ...process.env, ...b.env }, project: proj });
    const c = new Governor({ env: { ...process.env, ...b.env }, project: proj, config });
    try {
      await (await g.acquire("d1", { limit: 1, budgets: [day(1)], estimate: 0.5 })).release(); // unsettled: 0.5 counts
      for (const [who, budget] of [[g, { ...day(1), per: "1s" }], [g, { ...day(1), unit: "tokens" }], [c, "evals-day"]] as const)
        await assert.rejects(who.acquire("d2", { limit: 1, budgets: [budget], estimate: 0.9 }), (e: unknown) => {
          assert.ok(e instanceof GovernorError && !(e instanceof Busy) && e.code === 125, String(e));
          assert.match(e.message, /"USD per 24h0m0s"/);
          assert.match(e.message, /"(USD per 1s|tokens per 24h0m0s)"/);
          return true;
        });
      await assert.rejects(g.acquire("d3", { limit: 1, budgets: [day(1)], estimate: 0.6 }), (e: unknown) => {
        assert.ok(e instanceof Busy, String(e));
        assert.deepEqual([e.budget?.spent, e.budget?.reserved], [0.5, 0]);
        return true;
      });
    } finally {
      await g.close();
      await c.close();
    }
  });

  test(`amounts and counts cross the bridge exactly on the ${b.name} backend, or are refused by name`, async () => {
    // docs/bridge-protocol.md: a decimal string is read exactly, a number as
    // the millionth it stands for; finer is refused, never rounded (an
    // estimate of 1e-7 reserved 0 before); a count above 2^53 goes as a bigint.
    const config = join(tmp("gov-cfg-"), "exec-defaults.yaml");
    writeFileSync(config, "providers:\n  anthropic: {tokens_per_minute: 6000}\n", { mode: 0o600 });
    const g = gov(config);
    try {
      const big: Budget = { name: "exact", limit: "1000000000", unit: "USD", per: "24h" };
      for (const [estimate, want] of [["999999999.999999", "999999999.999999"], ["0.000001", "0.000001"], [0.1 + 0.2, "0.3"], [2e3, "2000"]]) {
        const s = await g.acquire("x1", { limit: 1, budgets: [big], estimate });
        assert.equal(String(s.budgets[0].reserved), want, String(estimate));
        await s.settle("0");
        await s.release();
      }
      for (const cost of [0.1, "0.2"]) {
        const s = await g.acquire("x2", { limit: 1, budgets: [day(1)], estimate: "0.5" });
        await s.settle(cost);
        await s.release();
      }
      await assert.rejects(g.acquire("x3", { limit: 1, budgets: [day(1)], estimate: 1 }), (e: unknown) => {
        assert.ok(e instanceof Busy, String(e));
        assert.equal(String(e.budget?.spent), "0.3"); // the millionths kept, not 0.30000000000000004
        return true;
      });
      for (const [estimate, named] of [[1e-7, /estimate 1e-7 is finer than a millionth/], ["0.1234567", /estimate "0.1234567"/]] as const)
        await assert.rejects(g.acquire("x4", { limit: 1, budgets: [day(1)], estimate }), (e: unknown) => {
          assert.ok(e instanceof GovernorError && e.code === 125, String(e));
          assert.match(e.message, named);
          return true;
        });
      const p = g.provider("anthropic");
      await assert.rejects(p.run(() => "never", { tokens: 2n ** 53n + 1n, wait: false }), /9007199254740993 tokens/);
      await assert.rejects(p.run(() => "never", { tokens: 2 ** 53 + 2, wait: false }), /tokens 9007199254740994: above 2\^53 - 1 a number is not exact.*9007199254740994n/);
      assert.equal(await p.run(() => "ran", { tokens: 2000n, wait: false }), "ran");
    } finally {
      await g.close();
    }
  });

  test(`the provider gate on the ${b.name} backend settles by itself from the usage`, async () => {
    const config = join(tmp("gov-cfg-"), "exec-defaults.yaml");
    writeFileSync(config, "providers:\n  anthropic: {max_concurrency: 2}\n", { mode: 0o600 });
    const g = gov(config);
    try {
      const p = g.provider("anthropic", { budgets: [day(0.1)], price: new Price({ input: 3, output: 15 }) });
      const body = { usage: { input_tokens: 1000, output_tokens: 2000 } }; // 0.003 + 0.03
      assert.equal(await p.run(() => body, { tokens: 1000, maxTokens: 4096, wait: false }), body); // estimate 0.06444 fits
      await p.run(() => "no usage here", { tokens: 1000, maxTokens: 4096, wait: false }); // counted at its estimate
      await assert.rejects(p.run(() => body, { tokens: 1000, maxTokens: 4096, wait: false }), (e: unknown) => {
        assert.ok(e instanceof Busy, String(e));
        assert.ok(Math.abs(e.budget!.spent - (0.033 + 0.06444)) < 1e-9, JSON.stringify(e.budget));
        return true;
      });
      await assert.rejects(p.run(() => body), /estimate/);
    } finally {
      await g.close();
    }
  });

  test(`a configured budget scoped on the provider on the ${b.name} backend: charged though the gate names none, at the configured price`, async () => {
    const config = join(tmp("gov-cfg-"), "exec-defaults.yaml");
    writeFileSync(config, "providers:\n  anthropic: {max_concurrency: 2}\n  openai: {max_concurrency: 2}\n" +
      "budgets:\n  anthropic-day: {limit: 0.1, unit: USD, per: 24h, providers: [anthropic]}\n" +
      "prices:\n  anthropic: {input: 3, output: 15}\n", { mode: 0o600 });
    const g = gov(config);
    try {
      const p = g.provider("anthropic"); // no budgets, no price: the configuration's
      const body = { usage: { input_tokens: 1000, output_tokens: 2000 } }; // 0.003 + 0.03 at the configured price
      const call = { tokens: 1000, maxTokens: 4096, model: "claude-sonnet-4-5", wait: false }; // estimate 0.06444
      assert.equal(await p.run(() => body, call), body);
      await p.run(() => "no usage here", call); // counted at its estimate
      await assert.rejects(p.run(() => body, call), (e: unknown) => {
        assert.ok(e instanceof Busy, String(e));
        assert.equal(e.budget?.name, "anthropic-day");
        assert.ok(Math.abs(e.budget!.spent - (0.033 + 0.06444)) < 1e-9, JSON.stringify(e.budget));
        return true;
      });
      assert.equal(await p.run(() => "free", { wait: false }), "free"); // no estimate, no maxTokens: not charged (run --provider without --cost)
      assert.equal(await g.provider("openai").run(() => "other", { estimate: 0.5, wait: false }), "other"); // out of the scope
    } finally {
      await g.close();
    }
  });

  test(`a price in code wins over the configured one on the ${b.name} backend`, async () => {
    const config = join(tmp("gov-cfg-"), "exec-defaults.yaml");
    writeFileSync(config, "providers:\n  anthropic: {max_concurrency: 2}\n" +
      "budgets:\n  anthropic-day: {limit: 0.1, unit: USD, per: 24h, providers: [anthropic]}\n" +
      "prices:\n  anthropic: {input: 3, output: 15}\n", { mode: 0o600 });
    const g = gov(config);
    try {
      const p = g.provider("anthropic", { price: new Price({ input: 30, output: 150 }) });
      const body = { usage: { input_tokens: 100, output_tokens: 100 } }; // 0.018 here, 0.0018 at the configured price
      assert.equal(await p.run(() => body, { tokens: 100, maxTokens: 100, wait: false }), body);
      await assert.rejects(g.provider("anthropic").run(() => "probe", { estimate: 1, wait: false }), (e: unknown) => {
        assert.ok(e instanceof Busy, String(e));
        assert.equal(e.budget?.name, "anthropic-day");
        assert.ok(Math.abs(e.budget!.spent - 0.018) < 1e-9, JSON.stringify(e.budget));
        return true;
      });
    } finally {
      await g.close();
    }
  });

  test(`the provider gate on the ${b.name} backend reports and releases in one request`, async () => {
    // The report carries the release (the settle goes with the slot's
    // release); a 429 still starts the cool-off.
    const config = join(tmp("gov-cfg-"), "exec-defaults.yaml");
    writeFileSync(config, "providers:\n  anthropic: {max_concurrency: 2}\n", { mode: 0o600 });
    const g = gov(config);
    try {
      const p = g.provider("anthropic", { budgets: [day(1)] });
      await p.run(() => "connected", { estimate: 0.1, wait: false });
      const bridge = (g as unknown as { bridge: { call: (op: string, ...rest: unknown[]) => Promise<unknown> } }).bridge;
      const ops: string[] = [];
      const call = bridge.call.bind(bridge);
      bridge.call = (op: string, ...rest: unknown[]) => (ops.push(op), call(op, ...rest));
      for (let i = 0; i < 3; i++) assert.equal(await p.run(() => "done", { estimate: 0.1, wait: false }), "done"); // two slots: each call freed its own
      assert.deepEqual(ops, ["provider_acquire", "provider_report", "provider_acquire", "provider_report", "provider_acquire", "provider_report"]);
      const limited = Object.assign(new Error("429"), { status: 429, headers: { "retry-after": "30" } });
      await assert.rejects(p.run(() => { throw limited; }, { estimate: 0.1, wait: false }), (e: unknown) => e === limited);
      await assert.rejects(p.run(() => "cooling off", { estimate: 0.1, wait: false }), (e: unknown) => e instanceof Busy);
      assert.ok(!ops.includes("release"), ops.join(","));
    } finally {
      await g.close();
    }
  });

  test(`the provider gate on the ${b.name} backend settles its token reservation from the usage`, async () => {
    // Rates only: 6000 tokens a minute, 100 a second refilled. The first
    // call reserves them all and uses 1000: the other 5000 are given back,
    // so a second call of 5000 fits at once.
    const config = join(tmp("gov-cfg-"), "exec-defaults.yaml");
    writeFileSync(config, "providers:\n  anthropic: {tokens_per_minute: 6000}\n", { mode: 0o600 });
    const g = gov(config);
    try {
      const p = g.provider("anthropic");
      const body = { usage: { input_tokens: 400, output_tokens: 600 } };
      assert.equal(await p.run(() => body, { tokens: 6000, wait: false }), body);
      // usedTokens says it when the result has no usage the gate reads.
      assert.equal(await p.run(() => null, { tokens: 5000, wait: false, usedTokens: () => 0 }), null);
      // No usage: it stays at its estimate.
      assert.equal(await p.run(() => "no usage", { tokens: 5000, wait: false }), "no usage");
      await assert.rejects(p.run(() => null, { tokens: 5000, wait: false }), (e: unknown) => e instanceof Busy);
    } finally {
      await g.close();
    }
  });
}
