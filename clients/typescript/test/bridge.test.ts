// The client with a real `governor bridge` ($GOVERNOR_BIN), in separate Node
// processes, on the file backend and on a redis-server started here.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { backends, cli, here, intervals, mono, overlap, project, tmp, Worker, type Backend } from "./helpers.js";

const config = join(tmp("gov-cfg-"), "exec-defaults.yaml");
// A short lease, so that a takeover is seen within a heartbeat and a dead
// bridge's lease expires soon; a limit-1 resource and a provider.
writeFileSync(config, ["lease:", "  ttl: 3s", "  heartbeat: 1s", "resources:", "  t: {limit: 1}", "providers:", "  p: {max_concurrency: 1}", ""].join("\n"), { mode: 0o600 });

const all = await backends();
after(async () => {
  for (const b of all) await b.stop();
});

function workers(b: Backend, proj: string, out: string) {
  return (vars: Record<string, string>) => new Worker({ ...b.env, CONFIG: config, PROJECT: proj, OUT: out, ...vars });
}

for (const b of all) {
  describe(`${b.name} backend`, () => {
    test("two processes never overlap on a limit-1 slot, and tokens strictly increase", async () => {
      const out = join(tmp(), "work");
      const w = workers(b, project(), out);
      const a = w({ MODE: "churn", WHO: "a", N: "15", HOLD_MS: "4" });
      const c = w({ MODE: "churn", WHO: "b", N: "15", HOLD_MS: "4" });
      await Promise.all([a.line("served 15", 90_000), c.line("served 15", 90_000)]);
      const { done, open } = intervals(out);
      assert.deepEqual(open, []);
      assert.equal(done.length, 30);
      assert.equal(overlap(done), undefined, `overlapping intervals: ${JSON.stringify(overlap(done), (_, v) => (typeof v === "bigint" ? String(v) : v))}`);
      for (let i = 1; i < done.length; i++) assert.ok(done[i].token > done[i - 1].token, `token ${done[i].token} after ${done[i - 1].token}`);
      assert.ok(new Set(done.map((d) => d.who)).size === 2);
    });

    test("a SIGKILLed client's slot goes to the next waiter within a second", async () => {
      const out = join(tmp(), "work");
      const w = workers(b, project(), out);
      const holder = w({ MODE: "hold", WHO: "a" });
      await holder.line("held");
      const waiter = w({ MODE: "churn", WHO: "b", N: "1", HOLD_MS: "1" });
      // The waiter is queued once slots shows it waiting.
      await waitFor(async () => (await slotsJSON(b, holder)).waiters.length === 1);
      const killedAt = mono();
      holder.kill("SIGKILL");
      await waiter.line("served 1", 30_000);
      const { done } = intervals(out);
      const next = done.find((d) => d.who === "b")!;
      const ms = Number(next.start - killedAt) / 1e6;
      assert.ok(ms < 1000, `the waiter got the slot ${ms.toFixed(0)} ms after the holder was killed`);
    });

    test("a SIGKILLed bridge aborts lease.signal and the body stops before the next holder starts", async () => {
      const out = join(tmp(), "work");
      const w = workers(b, project(), out);
      const holder = w({ MODE: "hold", WHO: "a" });
      const [, , bridgePid] = (await holder.line("held")).split(" ");
      const waiter = w({ MODE: "churn", WHO: "b", N: "1", HOLD_MS: "1" });
      await waitFor(async () => (await slotsJSON(b, holder)).waiters.length === 1);
      process.kill(Number(bridgePid), "SIGKILL");
      const stopped = await holder.line("stopped", 10_000);
      assert.match(stopped, /^stopped lost /);
      await waiter.line("served 1", 30_000);
      const { done, lastT } = intervals(out);
      const a = done.find((d) => d.who === "a")!;
      const next = done.find((d) => d.who === "b")!;
      assert.ok(a.end < next.start, "the body ended before the next holder started");
      assert.ok(lastT.get("a")! < next.start, "no step of the body after the next holder started");
    });

    test("a --force takeover aborts the holder's signal within a heartbeat", async () => {
      const proj = project();
      const w = workers(b, proj, join(tmp(), "work"));
      const holder = w({ MODE: "hold", WHO: "a" });
      const handle = (await holder.line("held")).split(" ")[3];
      const leaseId = handle.slice(handle.indexOf("@") + 1, handle.indexOf("."));
      await cli(b.env, "--config", config, "--project", proj, "takeover", "t", "--lease", leaseId, "--force");
      const at = mono();
      const stopped = await holder.line("stopped", 10_000);
      const ms = Number(mono() - at) / 1e6;
      assert.match(stopped, /^stopped lost .*taken over/);
      // heartbeat 1s; a second more for a loaded machine.
      assert.ok(ms < 2000, `the signal aborted ${ms.toFixed(0)} ms after the takeover`);
    });

    test("a cool-off reported by one process holds back another", async (t) => {
      const proj = project();
      const w = workers(b, proj, join(tmp(), "work"));
      const reporter = w({ MODE: "provider-429", PROVIDER: "p", RETRY: "30" });
      const reported = await Promise.race([reporter.line("reported"), reporter.line("fail")]);
      if (reported.includes("providers need internal/acquire")) {
        // TODO(bridge): the interim bridge has no provider ops until internal/acquire lands.
        t.skip("bridge without provider ops (interim pipeline)");
        return;
      }
      assert.equal(reported, "reported 429");
      const other = w({ MODE: "provider-try", PROVIDER: "p" });
      assert.match(await other.line("refused"), /^refused Busy 73 .*/);
      // And the CLI's backoff holds back a Node process the same way.
      const proj2 = project();
      await cli(b.env, "--config", config, "--project", proj2, "backoff", "p", "--retry-after", "30s");
      const third = workers(b, proj2, join(tmp(), "work"))({ MODE: "provider-try", PROVIDER: "p" });
      assert.match(await third.line("refused"), /^refused Busy 73 /);
    });

    test("a provider gate runs inside governor run of a resource before it in the lock order, and is refused after one", async () => {
      const proj = project();
      const env = { ...b.env, CONFIG: config, PROJECT: proj, MODE: "provider-try", PROVIDER: "p" };
      const inside = (resource: string) =>
        cli(env, "--config", config, "--project", proj, "run", "--resource", resource, "--limit", "1", "--", process.execPath, join(here, "worker.js"));
      assert.equal((await inside("a")).stdout.trim(), "ran");
      // provider:p before t, held by the run: waiting for p holding t could
      // deadlock, as for a nested governor run --provider p.
      assert.match((await inside("t")).stdout.trim(), /^refused \w+ 125 provider:p comes before t in the lock order/);
    });

    test("a slot inside governor run of it nests, with the run's fencing token (GOVERNOR_TOKEN)", async () => {
      const proj = project();
      const { stdout } = await cli({ ...b.env, CONFIG: config, PROJECT: proj, MODE: "nested", RES: "heavy" },
        "--config", config, "--project", proj, "run", "--resource", "heavy", "--limit", "1", "--", process.execPath, join(here, "worker.js"));
      const m = /^nested (\w+) (\d+)$/.exec(stdout.trim());
      assert.ok(m, stdout);
      assert.equal(m[1], "true");
      assert.ok(Number(m[2]) > 0, `token ${m[2]}: want the run's, not 0`);
    });

    test("a provider gate inside governor run --provider p joins its hold (max_concurrency 1), as a nested run does", async () => {
      const proj = project();
      const { stdout } = await cli({ ...b.env, CONFIG: config, PROJECT: proj, MODE: "provider-try", PROVIDER: "p" },
        "--config", config, "--project", proj, "run", "--provider", "p", "--", process.execPath, join(here, "worker.js"));
      assert.equal(stdout.trim(), "ran");
    });
  });
}

/** slots --json of resource t, through the CLI, in the worker's project. */
async function slotsJSON(b: Backend, w: Worker): Promise<{ holders: unknown[]; waiters: unknown[] }> {
  const { stdout } = await cli(b.env, "--config", config, "--project", w.env.PROJECT, "--json", "slots", "t");
  const r = JSON.parse(stdout).resources.find((x: { resource: string }) => x.resource === "t");
  return { holders: r?.holders ?? [], waiters: r?.waiters ?? [] };
}

async function waitFor(cond: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
