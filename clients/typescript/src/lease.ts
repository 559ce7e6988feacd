// A held lease: its token and handle, an AbortSignal aborted on loss, and
// release through `await using` (Symbol.asyncDispose).
import type { Bridge, BridgeEvent } from "./bridge.js";
import { LeaseLost } from "./errors.js";
import type { BudgetState } from "./budget.js";
import type { RecordOf } from "./record.js";

// Node 20 has no Symbol.asyncDispose of its own.
(Symbol as { asyncDispose?: symbol }).asyncDispose ??= Symbol.for("Symbol.asyncDispose");

export interface HeldResource {
  resource: string;
  /** RESOURCE@LEASE_ID.SECRET: the proof of holding; keep it to yourself. */
  handle: string;
  lease_id: string;
  token: number;
  weight: number;
  /** Held by an ancestor (GOVERNOR_HELD), not acquired again. */
  nested: boolean;
  expires_at?: string;
}

export class Lease implements AsyncDisposable {
  /** The bridge-local lease id ("L1"). */
  readonly id: string;
  readonly resources: HeldResource[];
  /** What a child process needs to nest inside this lease (GOVERNOR_HELD, HEAVY_LOCK_HELD). */
  readonly env: Record<string, string>;
  private readonly bridge: Bridge;
  // The AbortController is made when signal is first asked for: a lease
  // whose signal nobody reads costs no controller and no abort event.
  private controller: AbortController | undefined;
  /** Why the lease was lost, once it was. */
  private lossReason: LeaseLost | undefined;
  private released = false;
  private ended = false;
  private off: () => void = noop;

  /** Seconds spent waiting. */
  readonly waited: number;
  /** The limit / ignored-env notes the CLI prints. */
  readonly notes: string[];
  /** The spend budgets reserved with the slot, as the reservation left them. */
  readonly budgets: BudgetState[];
  /** What a wait record says of the resources (asked for by withSlot's record). */
  readonly recordOf: RecordOf | undefined;

  constructor(bridge: Bridge, result: { lease: string; resources: HeldResource[]; env?: Record<string, string>; waited?: number; notes?: string[]; budgets?: BudgetState[]; record?: RecordOf }) {
    this.bridge = bridge;
    this.id = result.lease;
    this.resources = result.resources ?? [];
    this.env = result.env ?? {};
    this.waited = result.waited ?? 0;
    this.notes = result.notes ?? [];
    this.budgets = result.budgets ?? [];
    this.recordOf = result.record;
    bridge.ref();
    const off = bridge.watch(this.id, (e) => this.onEvent(e));
    if (!this.ended) this.off = off;
  }

  /** The bridge's lost event of this lease, or its exit. */
  private onEvent(e: BridgeEvent): void {
    if (e.event === "bridge_exit") {
      this.lose(new LeaseLost(`lease ${this.id} lost: ${e.reason}`, 122, "lost"));
    } else if (e.event === "lost" && e.lease === this.id) {
      const what = typeof e.resource === "string" ? ` (${e.resource})` : "";
      this.lose(new LeaseLost(`lease ${this.id}${what} was lost: ${e.reason ?? "unknown"}`, 122, "lost", e));
    }
  }

  private lose(err: LeaseLost): void {
    this.end();
    if (this.lossReason || this.released) return;
    this.lossReason = err;
    this.controller?.abort(err);
  }

  /** Stop listening, and stop keeping the process alive (once). */
  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.off();
    this.bridge.unrefOne();
  }

  /** Aborted (with a LeaseLost as its reason) the moment the lease is lost: pass it to fetch. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.lossReason) this.controller.abort(this.lossReason);
      else if (this.released) this.controller.abort(this.releasedReason());
    }
    return this.controller.signal;
  }
  /** True once the lease is lost (and not released since). */
  get lost(): boolean {
    return this.lossReason !== undefined && !this.released;
  }
  /** The fencing token of the first resource (strictly increasing per resource). */
  get token(): number {
    return this.resources[0]?.token ?? 0;
  }
  /** RESOURCE@LEASE_ID.SECRET of the first resource. */
  get handle(): string {
    return this.resources[0]?.handle ?? "";
  }

  /** Throw the loss reason if the lease is lost. */
  throwIfLost(): void {
    if (this.lost) throw this.lossReason;
  }

  /** Mark progress (for a progress timeout). */
  async touch(): Promise<void> {
    await this.bridge.call("touch", { lease: this.id });
  }

  /**
   * The next number of the fenced sequence NAME, fenced by the token of
   * resource (default the first): Busy once a takeover made the token stale.
   */
  async seqNext(name: string, resource?: string): Promise<number> {
    const r = await this.bridge.call("seq_next", { lease: this.id, name, resource });
    return r.number;
  }

  /**
   * Tell the actual cost of the work this lease guarded, in the budgets'
   * unit: one cost for every budget, or a cost by budget name; none: at the
   * estimate. Once per lease: a second settle changes nothing and returns
   * false. A lease released unsettled counts its estimate; an actual above
   * the estimate is counted in full (an overrun). A cost is a number, or a
   * decimal string ("0.25") read exactly; finer than a millionth of the unit
   * is refused (GovernorError, 125), never rounded.
   */
  async settle(cost?: number | string | Record<string, number | string>): Promise<boolean> {
    const args = typeof cost === "object" ? { lease: this.id, costs: cost } : { lease: this.id, cost };
    const r = await this.bridge.call("settle", args);
    return r.settled === true;
  }

  /**
   * Free the slots. Safe to call twice, and after a loss (the loss was told
   * by signal; release does not throw it again).
   *
   * A lease granted from the process's capacity share (capacity: true; token
   * 0), or any with opts.wait false, is released without waiting for the
   * bridge's reply: the bridge runs every later request of this Governor after
   * it, so a slot it frees is free for this Governor's next acquire (another
   * process's may come first); when it fails (a loss the bridge saw at the
   * release and this process had not read yet, a backend error), the next
   * call of this Governor rejects with its error, naming the lease, and does
   * not run; Governor.close rejects with what no call took. Other leases, and
   * opts.wait true, wait: the slot is free for every process once it resolves.
   */
  async release(opts: { wait?: boolean } = {}): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.end();
    if (!this.lossReason) this.controller?.abort(this.releasedReason());
    if (this.bridge.dead) return;
    if (this.quietly(opts.wait)) return this.bridge.sendQuiet("release", { lease: this.id });
    try {
      await this.bridge.call("release", { lease: this.id });
    } catch (err) {
      if (!(err instanceof LeaseLost)) throw err;
    }
  }

  /**
   * Release it with the request op, args plus release: true (such as
   * provider_report's: the report, then the release with the settle, in
   * one request); its result. LeaseLost when the lease was lost. A request
   * refused (bad input releases nothing) is followed by a plain release.
   * Released before: op alone. Not waited for as release (a lease from the
   * capacity share; then its result is {}).
   * @internal
   */
  async releaseWith(op: string, args: Record<string, unknown>): Promise<any> {
    if (this.released || this.bridge.dead) return this.bridge.call(op, args);
    this.released = true;
    this.end();
    if (!this.lossReason) this.controller?.abort(this.releasedReason());
    args.release = true; // args are the caller's own, made for this request
    if (this.quietly(undefined)) {
      // Not waited for, as release: the bridge releases the lease whatever op finds.
      this.bridge.sendQuiet(op, args);
      return {};
    }
    try {
      return await this.bridge.call(op, args);
    } catch (err) {
      if (!(err instanceof LeaseLost)) await this.bridge.call("release", { lease: this.id }).catch(noop);
      throw err;
    }
  }

  /**
   * Whether a release goes without waiting for its reply: wait false, or
   * undefined for a lease granted from this process's capacity share (no other
   * process sees its slots come back); the bridge takes it, and the lease is
   * not known lost.
   */
  private quietly(wait: boolean | undefined): boolean {
    if (wait === undefined) {
      const own = this.resources.filter((r) => !r.nested);
      wait = own.length === 0 || own.some((r) => r.token !== 0);
    }
    return !wait && this.bridge.noreply && !this.lossReason;
  }

  private releasedReason(): LeaseLost {
    return new LeaseLost(`lease ${this.id} released`, 122, "released");
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}

function noop(): void {}
