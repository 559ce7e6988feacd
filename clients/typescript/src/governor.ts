// Governor: one lazily started bridge per instance; acquire, withSlot,
// provider gates, slots and the admin operations.
import { Bridge } from "./bridge.js";
import { findBinary } from "./binary.js";
import { Withdrawn } from "./errors.js";
import { Lease } from "./lease.js";
import { acquireArgs, holding, seconds, type AcquireOptions, type Duration, type SlotOptions } from "./options.js";
import { Provider, type ProviderOptions } from "./provider.js";
import { endRecord, WaitRecord } from "./record.js";

export { acquireArgs, holding, seconds, type AcquireOptions, type Duration, type SlotOptions } from "./options.js";


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
  /** The session every lease declares (default $GOVERNOR_SESSION, else HOST:PID); takeover by session names it. */
  session?: string;
  /** The governor binary (default: $GOVERNOR_BIN, the platform package, PATH). */
  bin?: string;
  /** Environment for the bridge (default process.env). */
  env?: NodeJS.ProcessEnv;
}

export interface TakeoverOptions {
  resource?: string;
  leaseId?: string;
  session?: string;
  /** Take it even if its owner may be alive. */
  force?: boolean;
  ttl?: Duration;
  limit?: number;
}

/** `governor slots --json`'s object. */
export interface SlotsResult {
  project: string;
  resources: { resource: string; limit: number; used: number; free: number; holders: any[]; waiters: any[]; [k: string]: unknown }[];
  [k: string]: unknown;
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
      this.bridge = new Bridge(o.bin ?? findBinary(env), args, env, o.session);
    }
    const b = this.bridge;
    await b.ready;
    return b;
  }

  /** The governor binary the bridge runs: its version ("0.1.0") and commit, from hello (starts the bridge). */
  async engine(): Promise<{ version: string; commit: string }> {
    const b = await this.connect();
    return { version: b.version, commit: b.commit };
  }

  /** The bridge if it is up (hello answered, not dead): a call then waits on no promise first. */
  private get up(): Bridge | undefined {
    return this.bridge?.live ? this.bridge : undefined;
  }

  /** One request to the bridge (the ops of docs/bridge-protocol.md). */
  async call(op: string, args: Record<string, unknown> = {}): Promise<any> {
    return (this.up ?? (await this.connect())).call(op, args);
  }

  /**
   * Take slots of resource (or of several, in the global lock order).
   * Throws Busy, Skipped, Superseded, Withdrawn or BackendError.
   */
  async acquire(resource: string | string[], opts: AcquireOptions = {}): Promise<Lease> {
    const resources = typeof resource === "string" ? [resource] : resource;
    const args = acquireArgs(opts);
    args.resources = resources;
    return this.acquireOp("acquire", args, resources.join(","), opts.signal);
  }

  /** An acquire-like op: cancelled through cancel_request when signal aborts. */
  async acquireOp(op: string, args: Record<string, unknown>, what: string, signal?: AbortSignal): Promise<Lease> {
    const bridge = this.up ?? (await this.connect());
    if (!signal) return new Lease(bridge, await bridge.call(op, args));
    signal.throwIfAborted();
    let reqId = 0;
    const onAbort = () => {
      if (reqId) bridge.call("cancel_request", { request: reqId }).catch(() => {});
    };
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      const result = await bridge.call(op, args, (id) => (reqId = id));
      const lease = new Lease(bridge, result);
      if (signal.aborted) {
        await lease.release();
        throw new Withdrawn(`${op} ${what}: cancelled by the caller`, 125, "cancelled");
      }
      return lease;
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }

  /**
   * The exec-run slots, as `governor run` with no --resource takes them:
   * plain, the run lock and every join slot (busy beside any run);
   * shareable, the run lock only (accepts joiners); join, one join slot
   * (runs beside a shareable run). resources are taken with them.
   */
  async execRun(opts: AcquireOptions = {}, ...resources: string[]): Promise<Lease> {
    return this.acquireOp("acquire", { resources, ...acquireArgs(opts), exec_run: true }, "exec run", opts.signal);
  }

  /**
   * Run fn holding the slot; released when fn settles. Should the lease be
   * lost while fn runs (lease.signal aborts), the LeaseLost is thrown even if
   * fn returned: its work may have run beyond the slot.
   */
  async withSlot<T>(resource: string | string[], opts: SlotOptions, fn: (lease: Lease) => Promise<T> | T): Promise<T> {
    if (!opts.record) return holding(await this.acquire(resource, opts), fn);
    const resources = typeof resource === "string" ? [resource] : resource;
    const args = { resources, ...acquireArgs(opts), record: true }; // a bad option throws before the file is opened
    const rec = new WaitRecord(opts.record, resources); // refused here, before the slot is asked for
    let lease: Lease;
    try {
      lease = await this.acquireOp("acquire", args, resources.join(","), opts.signal);
    } catch (e) {
      rec.command = await this.commandLine().catch(() => ""); // the acquire's error is the one to tell
      endRecord(rec, e);
      throw e;
    }
    try {
      const b = this.bridge!;
      rec.command = await this.commandLine();
      rec.granted(lease.recordOf, b.project, b.session);
    } catch (e) {
      rec.close();
      await lease.release().catch(() => {}); // the grant line's error is the one to tell
      throw e;
    }
    let result: T;
    try {
      result = await holding(lease, fn);
    } catch (e) {
      endRecord(rec, e);
      throw e;
    }
    rec.end(undefined);
    return result;
  }

  /** The process's command line as `governor run --record` writes it: secrets hidden by governor's one rule (the bridge's redact op). */
  private async commandLine(): Promise<string> {
    if (!this.bridge) return "";
    const r = (await this.bridge.call("redact", { args: process.argv })) as { command: string };
    return r.command;
  }

  /** The provider gate for NAME (resource provider:NAME); with budgets, each call reserves and settles its cost. */
  provider(name: string, opts: ProviderOptions = {}): Provider {
    return new Provider(this, name, opts);
  }

  /** Each resource's limit, use, holders and waiters (as `governor slots --json`). */
  async slots(...resources: string[]): Promise<SlotsResult> {
    return this.call("slots", { resources });
  }

  /** Takeovers, reclaims and lost leases (as `governor events --json`); since: how far back. */
  async events(resources: string[] = [], opts: { since?: Duration } = {}): Promise<{ events: any[] }> {
    return this.call("events", { resources, since: seconds(opts.since) });
  }

  /** Report a rate-limit signal: PROVIDER cools off for every process (`governor backoff`). */
  async backoff(provider: string, opts: { retryAfter?: Duration } = {}): Promise<{ until: string }> {
    return this.call("backoff", { provider, retry_after: seconds(opts.retryAfter) });
  }

  /**
   * Take over a lease (by resource and leaseId, or every lease of a session):
   * the new lease is held here, with a higher token; the old holder loses it.
   */
  async takeover(opts: TakeoverOptions): Promise<Lease & { taken: any[] }> {
    const args = { resource: opts.resource, lease_id: opts.leaseId, session: opts.session, force: opts.force, ttl: seconds(opts.ttl), limit: opts.limit };
    const bridge = this.up ?? (await this.connect());
    const result = await bridge.call("takeover", args);
    return Object.assign(new Lease(bridge, result), { taken: result.taken ?? [] });
  }

  /** Withdraw waiters of resource (one by waiter id, or a session's). */
  async cancel(resource: string, opts: { waiter?: string; session?: string } = {}): Promise<{ cancelled: number }> {
    return this.call("cancel", { resource, waiter: opts.waiter, session: opts.session });
  }
  async pause(resource: string, opts: { reason?: string } = {}): Promise<void> {
    return this.call("pause", { resource, reason: opts.reason });
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
    await b.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** For tests and diagnostics: the bridge process, if started. */
  get bridgeProcess() {
    return this.bridge?.process;
  }
}
