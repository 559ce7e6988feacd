// A provider gate: the provider's concurrency slot and rate reservation
// around one call, and the call's outcome reported (a 429 or 529 cools the
// provider off for every process).
import type { Governor } from "./governor.js";
import { acquireArgs, holding, type AcquireOptions, type Duration } from "./options.js";
import type { Lease } from "./lease.js";
import { LeaseLost } from "./errors.js";
import { usageFromJSON, type Budget, type Price, type Usage } from "./budget.js";

/**
 * A gate's spend budgets (inline, or a configured budget's name): each call reserves its estimate on them, and on
 * the configured budgets whose scope holds it, and settles its cost.
 */
export interface ProviderOptions {
  budgets?: (Budget | string)[];
  /**
   * Turns maxTokens (and tokens, the input) into the estimate, and the response's usage into the cost; without it,
   * the configuration's prices (prices.PROVIDER/MODEL, else prices.PROVIDER) do, in the bridge.
   */
  price?: Price;
}

export interface ProviderRunOptions extends AcquireOptions {
  /**
   * Tokens the call used (settles the token reservation, as Go's Provider.Do),
   * when known after the call; default: input and output of the result's usage.
   */
  usedTokens?: (result: unknown) => number | bigint | undefined;
  /** The call's max_tokens: with the gate's price (else the configuration's) and tokens, its estimate (unless estimate is given). */
  maxTokens?: number | bigint;
  /** The call's model: the configured budgets' models scope, and the configuration's price (prices.PROVIDER/MODEL). */
  model?: string;
  /** The call's usage, when the result is not a body usageFromJSON reads (an SDK object, a stream's end). */
  usage?: (result: unknown) => Usage | undefined;
}

/** What a call's outcome looks like to the gate: a fetch Response, or an error carrying one's status. */
interface HttpLike {
  status: number;
  headers?: { get?(name: string): string | null } | Record<string, string | string[] | undefined>;
}

function httpOf(v: unknown): HttpLike | undefined {
  if (v && typeof v === "object" && typeof (v as HttpLike).status === "number") return v as HttpLike;
  const r = (v as { response?: unknown } | null)?.response;
  if (r && typeof r === "object" && typeof (r as HttpLike).status === "number") return r as HttpLike;
  return undefined;
}

/** The headers a rate-limit signal is read from, as a plain lower-cased object. */
export function headerObject(h: HttpLike["headers"]): Record<string, string> {
  const out: Record<string, string> = {};
  if (!h) return out;
  if (typeof (h as { forEach?: unknown }).forEach === "function" && typeof (h as { get?: unknown }).get === "function") {
    (h as Headers).forEach((v, k) => (out[k.toLowerCase()] = v));
    return out;
  }
  for (const [k, v] of Object.entries(h as Record<string, string | string[] | undefined>)) {
    if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : String(v);
  }
  return out;
}

export class Provider {
  readonly name: string;
  private readonly gov: Governor;
  private readonly spend: ProviderOptions;

  constructor(gov: Governor, name: string, opts: ProviderOptions = {}) {
    this.gov = gov;
    this.name = name;
    this.spend = opts;
  }

  /**
   * Run fn inside the gate: waits for a concurrency slot and the rate budget
   * (and any cool-off), runs fn with the lease (lease.signal aborts on loss),
   * reports the outcome, releases. A fetch Response (or an error with
   * .status / .response) of 429 or 529 is reported as a rate-limit signal with
   * its headers (retry-after, ...).
   *
   * The call first reserves its estimate (opts.estimate, else price.estimate(tokens,
   * maxTokens), else maxTokens at the configuration's price for the provider and
   * opts.model) on the gate's budgets and on the configured budgets whose scope
   * holds the call (as `governor run --provider`), all or none: a call that does
   * not fit throws Busy (error.budget says which) or waits; a call with no
   * estimate and no price is charged nothing. After it, the gate settles by itself
   * what the result's usage costs at that price (a parsed body, a JSON string, or
   * opts.usage), else the estimate; that
   * usage's input and output tokens (or opts.usedTokens) settle the token
   * reservation (tokens), which otherwise stays at its estimate.
   */
  async run<T>(fn: (lease: Lease) => Promise<T> | T, opts: ProviderRunOptions = {}): Promise<T> {
    const { usedTokens, usage } = opts;
    const lease = await this.take(opts, opts.maxTokens, opts.model, opts.wait ?? true);
    return holding(lease, async () => {
      let result: T;
      try {
        result = await fn(lease);
      } catch (err) {
        // A loss is told by lease.signal; the call's own error goes on.
        await lease.releaseWith("provider_report", this.reportArgs(lease, err)).catch((e) => {
          if (!(e instanceof LeaseLost)) throw e;
        });
        throw err;
      }
      const u = usage ? usage(result) : usageFromJSON(result);
      // One request: the report, then the release with the settle.
      const args = this.reportArgs(lease, result, usedTokens ? usedTokens(result) : u && u.inputTokens + u.outputTokens);
      const settle = this.settlement(lease, u);
      if (settle.cost !== undefined) args.cost = settle.cost;
      if (settle.usage !== undefined) args.usage = settle.usage;
      await lease.releaseWith("provider_report", args);
      return result;
    });
  }

  /**
   * What settles the call's cost, for a lease that reserved spend: its usage's cost at the gate's price, else the
   * usage (the bridge prices it with the configuration's prices); none: settled at the estimate.
   */
  private settlement(lease: Lease, u: Usage | undefined): { cost?: number; usage?: Record<string, number> } {
    if (!lease.budgets.length || !u) return {};
    const price = this.spend.price;
    if (price) return { cost: price.cost(u) };
    return { usage: { input_tokens: u.inputTokens, cached_input_tokens: u.cachedInputTokens, output_tokens: u.outputTokens } };
  }

  /**
   * The gate slot and rate reservation (and the gate's spend budgets),
   * held until the lease is released.
   */
  async acquire(opts: AcquireOptions = {}, maxTokens?: number | bigint, model?: string): Promise<Lease> {
    return this.take(opts, maxTokens, model, opts.wait);
  }

  /** acquire, with wait decided by the caller (run waits unless told not to). */
  private take(opts: AcquireOptions, maxTokens: number | bigint | undefined, model: string | undefined, wait: boolean | undefined): Promise<Lease> {
    const budgets = opts.budgets ?? this.spend.budgets;
    let estimate = opts.estimate;
    // A price given here wins; else the bridge prices maxTokens with the configuration's.
    if (estimate === undefined && this.spend.price && maxTokens !== undefined) estimate = this.spend.price.estimate(opts.tokens ?? 0, maxTokens);
    if (budgets?.length && estimate === undefined && maxTokens === undefined)
      throw new TypeError(`provider ${this.name} has spend budgets: give estimate, or maxTokens (priced by the gate's price, else the configuration's prices)`);
    // env (the nesting variables) goes too: inside a run holding the
    // provider, the call joins its hold (docs/bridge-protocol.md).
    const args = acquireArgs(opts, budgets, estimate, wait);
    if (args.join || args.shareable) throw new TypeError("provider gate: join and shareable are for exec runs, not providers");
    args.join = args.shareable = undefined;
    // model and max_tokens: the configured budgets whose scope holds the call, and its price (docs/budgets.md).
    args.provider = this.name;
    args.model = model;
    args.max_tokens = maxTokens;
    return this.gov.acquireOp("provider_acquire", args, `provider:${this.name}`, opts.signal);
  }

  /**
   * Report the outcome of the call made under lease: outcome is a fetch
   * Response (or an error with .status or .response); 429 and 529 are a
   * rate-limit signal, with the response's headers (retry-after, ...). cost
   * settles the lease's spend budgets (lease.settle) in the same request.
   */
  async report(lease: Lease, outcome: unknown, usedTokens?: number | bigint, cost?: number | string): Promise<{ cooloff_until?: string; settled?: boolean }> {
    return this.gov.call("provider_report", { ...this.reportArgs(lease, outcome, usedTokens), cost });
  }

  /** provider_report's args for the call's outcome. */
  private reportArgs(lease: Lease, outcome: unknown, usedTokens?: number | bigint): Record<string, unknown> {
    const http = httpOf(outcome);
    const args: Record<string, unknown> = { lease: lease.id, used_tokens: usedTokens };
    if (http && (http.status === 429 || http.status === 529)) {
      args.outcome = "rate_limited";
      args.status = http.status;
      args.headers = headerObject(http.headers);
    } else {
      args.outcome = "ok";
    }
    return args;
  }

  /** Report a rate-limit signal by hand (`governor backoff`): the provider cools off for every process. */
  async backoff(retryAfter?: Duration): Promise<{ until: string }> {
    return this.gov.backoff(this.name, { retryAfter });
  }
}
