// An agent gate (issue 33): every model call of an agent loop goes through
// the provider gate with a spend budget. Before each call the gate reserves
// the call's upper-bound cost (price x (context tokens, maxTokens)) on the
// budget, for every process at once; a call that would not fit is refused
// before it is made, and the agent stops there. After each call the gate
// settles what the response's usage says it cost.
//
//   CONFIG=exec-defaults.yaml BUDGET=0.20 node agent.js [STEPS]
//
// Prints "step N cost C" per call, then "refused step N: ..." when the
// budget refused one, and "steps N spent S of L USD". Exit status 0 (the
// refusal is the expected end of a loop that hit its budget); 73 when the
// gate was busy for another reason; 125 on a configuration or backend error.
import { setTimeout as sleep } from "node:timers/promises";
import { Busy, Governor, GovernorError, Price, type Budget, type Lease } from "../../src/index.js";

const limit = Number(process.env.BUDGET ?? "0.20");
const steps = Number(process.argv[2] ?? "20");
const hour: Budget = { name: "agent-hour", limit, unit: "USD", per: "1h" };
const price = new Price({ input: 3, output: 15, cachedInput: 0.3 }); // USD per million tokens
const maxTokens = 2048;

/** A stand-in for the model call (fetch + response.json()): an Anthropic-shaped body. */
async function callModel(lease: Lease, context: number): Promise<{ content: string; usage: { input_tokens: number; output_tokens: number } }> {
  await sleep(5, undefined, { signal: lease.signal });
  return { content: "...", usage: { input_tokens: context, output_tokens: 600 + (context % 200) } };
}

const gov = new Governor({ config: process.env.CONFIG });
const gate = gov.provider("llm", { budgets: [hour], price });
let spent = 0;
let done = 0;
let code = 0;
try {
  for (let step = 1; step <= steps; step++) {
    const context = 2000 + step * 1500; // the conversation grows each step
    try {
      const reply = await gate.run((lease) => callModel(lease, context), { tokens: context, maxTokens, wait: false });
      const cost = price.cost({ inputTokens: reply.usage.input_tokens, cachedInputTokens: 0, outputTokens: reply.usage.output_tokens });
      spent += cost;
      done++;
      console.log(`step ${step} cost ${cost}`);
    } catch (err) {
      if (err instanceof Busy && err.budget) {
        const b = err.budget;
        console.log(`refused step ${step}: estimate ${b.estimate} USD would not fit: budget ${b.name} spent ${b.spent}, reserved ${b.reserved}, limit ${b.limit} ${b.unit}; resets at ${b.reset}`);
        break;
      }
      throw err;
    }
  }
  console.log(`steps ${done} spent ${Math.round(spent * 1e6) / 1e6} of ${limit} USD`);
} catch (err) {
  console.error(`agent: ${err}`);
  code = err instanceof GovernorError ? err.code : 125;
} finally {
  await gov.close();
}
process.exitCode = code;
