// Governor: one lazily started bridge per instance; acquire, withSlot,
// provider gates, slots and the admin operations.
import { Bridge } from "./bridge.js";
import { findBinary } from "./binary.js";
import { Withdrawn } from "./errors.js";
import { Lease } from "./lease.js";
import { Provider } from "./provider.js";

/** A duration: milliseconds, or a Go duration string ("10m", "1.5s"). */
export type Duration = number | string;

export interface GovernorOptions {
  /** File backend state directory (--dir; default $GOVERNOR_DIR). */
  dir?: string;
  /** Redis URL (given to the bridge in its environment, never on its command line). */
  redisUrl?: string;
  /** A file holding the Redis URL (--redis-url-file). */
  redisUrlFile?: string;
  /** Namespace of every resource (--project; default $GOVERNOR_PROJECT). */
  project?: string;
  /** exec-defaults.yaml to read (--config). */
  config?: string;
  /** The governor binary (default: $GOVERNOR_BIN, the platform package, PATH). */
  bin?: string;
  /** Environment for the bridge (default process.env). */
  env?: NodeJS.ProcessEnv;
}

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
  session?: string;
  /** Hold the exec-run lock and accept joiners (governor run --shareable). */
  shareable?: boolean;
  /** Take a join slot beside a shareable run (governor run --join). */
  join?: boolean;
  /** Aborting it withdraws a waiting acquire (Withdrawn). */
  signal?: AbortSignal;
}

export type TakeoverOptions = { force?: boolean; reason?: string };

/** A duration as the bridge takes it: a Go duration string. */
export function goDuration(d: Duration | undefined): string | undefined {
  if (d === undefined) return undefined;
  if (typeof d === "number") {
    if (!Number.isFinite(d) || d < 0) throw new RangeError(`duration ${d}: want milliseconds >= 0 or a string like "10s"`);
    return `${d}ms`;
  }
  return d;
}

function acquireArgs(resources: string[], o: AcquireOptions): Record<string, unknown> {
  let ifBusy = o.ifBusy;
  if (o.wait !== undefined) {
    if (ifBusy !== undefined && (ifBusy === "wait") !== o.wait)
      throw new TypeError(`acquire: wait: ${o.wait} contradicts ifBusy: "${ifBusy}"`);
    ifBusy ??= o.wait ? "wait" : "fail";
  }
  if (ifBusy !== undefined && !["fail", "wait", "skip"].includes(ifBusy))
    throw new TypeError(`acquire: ifBusy "${ifBusy}": want fail, wait or skip`);
  return {
    resources,
    if_busy: ifBusy,
    wait_timeout: goDuration(o.waitTimeout),
    weight: o.weight,
    exclusive: o.exclusive,
    limit: o.limit,
    priority: o.priority,
    fair_key: o.fairKey,
    supersede: o.supersede,
    cancel_in_progress: o.cancelInProgress,
    ttl: goDuration(o.ttl),
    progress_timeout: goDuration(o.progressTimeout),
    session: o.session,
    shareable: o.shareable,
    join: o.join,
  };
}

export class Governor {
  private readonly opts: GovernorOptions;
  private bridge: Bridge | undefined;

  constructor(opts: GovernorOptions = {}) {
    this.opts = { ...opts };
  }

  /** The bridge, started on first use (and again after it died). */
  async connect(): Promise<Bridge> {
    if (!this.bridge || this.bridge.dead) {
      const o = this.opts;
      const env = { ...(o.env ?? process.env) };
      if (o.redisUrl !== undefined) env.GOVERNOR_REDIS_URL = o.redisUrl;
      const args: string[] = [];
      if (o.dir !== undefined) args.push("--dir", o.dir);
      if (o.redisUrlFile !== undefined) args.push("--redis-url-file", o.redisUrlFile);
      if (o.config !== undefined) args.push("--config", o.config);
      if (o.project !== undefined) args.push("--project", o.project);
      this.bridge = new Bridge(o.bin ?? findBinary(env), args, env);
    }
    const b = this.bridge;
    await b.ready;
    return b;
  }

  /** One request to the bridge (the ops of docs/bridge-protocol.md). */
  async call(op: string, args: Record<string, unknown> = {}): Promise<any> {
    return (await this.connect()).call(op, args);
  }

  /**
   * Take slots of resource (or of several, in the global lock order).
   * Throws Busy, Skipped, Superseded, Withdrawn or BackendError.
   */
  async acquire(resource: string | string[], opts: AcquireOptions = {}): Promise<Lease> {
    const resources = typeof resource === "string" ? [resource] : resource;
    const args = acquireArgs(resources, opts);
    const bridge = await this.connect();
    const signal = opts.signal;
    signal?.throwIfAborted();
    let reqId = 0;
    const onAbort = () => {
      if (reqId) bridge.call("cancel_request", { request: reqId }).catch(() => {});
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const result = await bridge.call("acquire", args, (id) => (reqId = id));
      const lease = new Lease(bridge, result);
      if (signal?.aborted) {
        await lease.release();
        throw new Withdrawn(`acquire ${resources.join(",")}: cancelled by the caller`, 73, "withdrawn");
      }
      return lease;
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Run fn holding the slot; released when fn settles. */
  async withSlot<T>(resource: string | string[], opts: AcquireOptions, fn: (lease: Lease) => Promise<T> | T): Promise<T> {
    const lease = await this.acquire(resource, opts);
    try {
      return await fn(lease);
    } finally {
      await lease.release();
    }
  }

  /** The provider gate for NAME (resource provider:NAME). */
  provider(name: string): Provider {
    return new Provider(this, name);
  }

  /** Each resource's limit, use, holders and waiters (as `governor slots --json`). */
  async slots(resource?: string): Promise<any> {
    return this.call("slots", { resource });
  }

  async events(resource?: string): Promise<any> {
    return this.call("events", { resource });
  }

  /** Report a rate-limit signal: PROVIDER cools off for every process. */
  async backoff(provider: string, opts: { retryAfter?: Duration } = {}): Promise<any> {
    return this.call("backoff", { provider, retry_after: goDuration(opts.retryAfter) });
  }

  async takeover(target: string, opts: TakeoverOptions = {}): Promise<any> {
    return this.call("takeover", { target, force: opts.force, reason: opts.reason });
  }

  async cancel(resource: string, opts: { reason?: string } = {}): Promise<any> {
    return this.call("cancel", { resource, reason: opts.reason });
  }
  async pause(resource: string): Promise<any> {
    return this.call("pause", { resource });
  }
  async resume(resource: string): Promise<any> {
    return this.call("resume", { resource });
  }
  async limit(resource: string, limit: number | null): Promise<any> {
    return this.call("limit", limit === null ? { resource, clear: true } : { resource, limit });
  }

  /** Release everything and stop the bridge. */
  async close(): Promise<void> {
    const b = this.bridge;
    if (!b || b.dead) return;
    await new Promise<void>((resolve) => {
      b.process.once("exit", () => resolve());
      b.close();
    });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** For tests and diagnostics: the bridge process, if started. */
  get bridgeProcess() {
    return this.bridge?.process;
  }
}
