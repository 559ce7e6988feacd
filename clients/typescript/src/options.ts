// What an acquire takes: durations, the options, and their wire form
// (docs/bridge-protocol.md); holding, the body run under a lease. Shared by
// governor.ts and provider.ts, which import it and not each other.
import type { Lease } from "./lease.js";
import type { Budget } from "./budget.js";

/** A duration: milliseconds (as setTimeout), or a string like "10m", "1.5s", "250ms". */
export type Duration = number | string;

export interface AcquireOptions {
  /** Wait for the slot (ifBusy "wait"); false: fail at once with Busy. */
  wait?: boolean;
  /** fail (Busy, the default), wait, or skip (Skipped). */
  ifBusy?: "fail" | "wait" | "skip";
  /** Give up waiting after this long (Busy); implies wait. */
  waitTimeout?: Duration;
  weight?: number;
  exclusive?: boolean;
  /** The limit when the configuration has none. */
  limit?: number;
  priority?: string;
  fairKey?: string;
  supersede?: string;
  cancelInProgress?: boolean;
  ttl?: Duration;
  progressTimeout?: Duration;
  /** Tokens to reserve from a provider's tokens_per_minute budget (a bigint above 2^53). */
  tokens?: number | bigint;
  /** Hold the exec-run lock and accept joiners (governor run --shareable). */
  shareable?: boolean;
  /** Take a join slot beside a shareable run (governor run --join). */
  join?: boolean;
  /** Aborting it withdraws a waiting acquire (Withdrawn). */
  signal?: AbortSignal;
  /**
   * Spend budgets on which estimate is reserved with the slot, all or none (docs/budgets.md):
   * a Budget given inline, or the name of a budget of the configuration (budgets.NAME).
   */
  budgets?: (Budget | string)[];
  /**
   * The work's upper-bound cost, in the budgets' unit; settle the actual with lease.settle(cost).
   * A number, or a decimal string ("0.25") read exactly; finer than a millionth of the unit is refused, never rounded.
   */
  estimate?: number | string;
}

/** withSlot's options: an acquire's, and a wait record. */
export interface SlotOptions extends AcquireOptions {
  /**
   * A wait record (`governor run --record`): a grant and an end line per
   * invocation, appended to this file. Opened before the slot is asked for,
   * and refused as the CLI refuses it (a GovernorError, 125): a folder that
   * does not exist, not a regular file, a file others can write.
   */
  record?: string;
}

/** Run fn holding lease; release it after; a loss during fn is thrown. */
export async function holding<T>(lease: Lease, fn: (lease: Lease) => Promise<T> | T): Promise<T> {
  try {
    const result = await fn(lease);
    lease.throwIfLost();
    return result;
  } finally {
    await lease.release();
  }
}

const unitMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A duration as the bridge takes it: seconds. */
export function seconds(d: Duration | undefined): number | undefined {
  if (d === undefined) return undefined;
  let ms: number;
  if (typeof d === "number") {
    ms = d;
  } else {
    const parts = [...d.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
    if (d === "0") ms = 0;
    else if (parts.length === 0 || parts.map((p) => p[0]).join("") !== d)
      throw new RangeError(`duration "${d}": want milliseconds or a string like "1h30m", "10s", "250ms"`);
    else ms = parts.reduce((sum, p) => sum + Number(p[1]) * unitMs[p[2]], 0);
  }
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`duration ${d}: want milliseconds >= 0 or a string like "10s"`);
  return ms / 1000;
}

/** A budget's wire form (docs/bridge-protocol.md, Spend budgets): a configured budget's name as it is. */
function budgetArg(b: Budget | string): Record<string, unknown> | string {
  if (typeof b === "string") return b;
  if (typeof b !== "object" || b === null)
    throw new TypeError(`budgets: ${String(b)} is neither a Budget nor a configured budget's name (string)`);
  return { name: b.name, limit: b.limit, unit: b.unit ?? "USD", per: seconds(b.per), calendar: b.calendar, tz: b.tz, soft: b.soft };
}

/** The nesting variables of this process (what an enclosing governor run holds). */
function nestingEnv(env: NodeJS.ProcessEnv): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const k of ["GOVERNOR_HELD", "GOVERNOR_TOKEN", "HEAVY_LOCK_HELD"]) if (env[k]) out[k] = env[k]!;
  return Object.keys(out).length ? out : undefined;
}

/**
 * The acquire op's args (docs/bridge-protocol.md) for these options, with
 * budgets, estimate and wait given apart when the caller decides them (a
 * provider gate's): no copy of o is made, the args are a new object the
 * caller may add to. (An object spread, then added to, made a provider
 * gate's pair cost twice the CPU of a slot's: docs/capacity.md.)
 */
export function acquireArgs(
  o: AcquireOptions,
  budgets = o.budgets,
  estimate = o.estimate,
  wait = o.wait,
): Record<string, unknown> {
  let ifBusy = o.ifBusy;
  if (wait !== undefined) {
    if (ifBusy !== undefined && (ifBusy === "wait") !== wait)
      throw new TypeError(`acquire: wait: ${wait} contradicts ifBusy: "${ifBusy}"`);
    ifBusy ??= wait ? "wait" : "fail";
  }
  if (ifBusy !== undefined && !["fail", "wait", "skip"].includes(ifBusy))
    throw new TypeError(`acquire: ifBusy "${ifBusy}": want fail, wait or skip`);
  return {
    if_busy: ifBusy,
    wait_timeout: seconds(o.waitTimeout),
    weight: o.weight,
    exclusive: o.exclusive,
    limit: o.limit,
    priority: o.priority,
    fair_key: o.fairKey,
    supersede: o.supersede,
    cancel_in_progress: o.cancelInProgress,
    ttl: seconds(o.ttl),
    progress_timeout: seconds(o.progressTimeout),
    shareable: o.shareable,
    join: o.join,
    tokens: o.tokens,
    budgets: budgets?.map(budgetArg),
    estimate,
    env: nestingEnv(process.env),
  };
}
