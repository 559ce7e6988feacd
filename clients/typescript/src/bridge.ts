// One `governor bridge` co-process: newline-delimited JSON requests with ids,
// replies, and pushed events (docs/bridge-protocol.md).
import { spawn, type ChildProcess } from "node:child_process";
import { BackendError, fromWire, GovernorError, LeaseLost, ProtocolError, type WireError } from "./errors.js";
import { VERSION } from "./version.js";

/** The protocol number this client speaks. */
export const PROTOCOL = 1;
export const CLIENT = `typescript/${VERSION}`;

export interface BridgeEvent {
  event: string;
  lease?: string;
  request?: number;
  reason?: string;
  [k: string]: unknown;
}

interface Pending {
  resolve(result: any): void;
  reject(err: Error): void;
}

/**
 * Live bridges, closed when this process exits: their stdin ends, and each
 * releases what it holds and exits in order (as it does when this process
 * dies any other way: the pipe ends with it, and the bridge watches its pid).
 */
const live = new Set<ChildProcess>();
let exitHook = false;
function closeAllOnExit(): void {
  if (exitHook) return;
  exitHook = true;
  process.on("exit", () => {
    for (const child of live) child.stdin?.destroy();
  });
}

// Token counts (docs/bridge-protocol.md, Counts): whole numbers, which a
// JavaScript number holds exactly only up to 2^53 - 1.
const counts = new Set(["tokens", "max_tokens", "used_tokens", "input_tokens", "cached_input_tokens", "output_tokens"]);

/** A request's values on the wire: a bigint as its decimal string (exact); a count a number cannot hold exactly refused. */
function wire(key: string, v: unknown): unknown {
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "number" && counts.has(key) && Number.isInteger(v) && !Number.isSafeInteger(v))
    throw new RangeError(`${key} ${v}: above 2^53 - 1 a number is not exact (it may be rounded already); pass a bigint, such as ${BigInt(v)}n`);
  return v;
}

export class Bridge {
  private child: ChildProcess;
  private nextId = 1;
  private pending = new Map<number, Pending>();
  private listeners = new Set<(e: BridgeEvent) => void>();
  /** Held leases by id: a lost event goes to its lease only, not through every listener. */
  private watchers = new Map<string, (e: BridgeEvent) => void>();
  /** Lost events that came before their Lease was made (keepLost). */
  private lostLeases = new Map<string, BridgeEvent>();
  private lostSweep = false;
  private holds = 0;
  private deadError: GovernorError | undefined;
  private isReady = false;
  /** The end of the last chunk of stdout, not yet a whole line. */
  private partial: Buffer | undefined;
  /** The bridge's pid and governor version, from hello. */
  pid = 0;
  version = "";
  commit = "";
  backend = "";
  project = "";
  session = "";
  /** The bridge takes releases not waited for (hello's features: "noreply"). */
  noreply = false;
  /** One was sent: close flushes them (bye). */
  private quiet = false;
  /**
   * Lines of releases not waited for, not written yet: written with the next
   * request, or at the end of this turn of the event loop (one write, one
   * wake-up of the bridge, for a release and the acquire after it).
   */
  private outbox = "";
  private flushing = false;
  readonly ready: Promise<void>;

  constructor(bin: string, args: string[], env: NodeJS.ProcessEnv, session?: string) {
    // One processor from the start: the bridge would set it itself,
    // stopping its runtime to shrink it (a fifth of its start's CPU).
    if (env.GOMAXPROCS === undefined) env = { ...env, GOMAXPROCS: "1" };
    // detached: a session of its own, so that a Ctrl-C in the terminal
    // reaches this process alone, which then ends its bridge in order.
    this.child = spawn(bin, ["bridge", ...args], { stdio: ["pipe", "pipe", "inherit"], env, detached: true });
    live.add(this.child);
    closeAllOnExit();
    this.child.on("error", (err) => this.die(new BackendError(`governor bridge (${bin}): ${err.message}`)));
    const out = this.child.stdout!;
    // Its exit is told once its output is read to the end: 'exit' may come
    // before the last replies (bye's) are read.
    let exited: LeaseLost | undefined;
    this.child.on("exit", (code, sig) => {
      live.delete(this.child);
      exited = new LeaseLost(`governor bridge exited (${sig ?? `code ${code}`})`, 122, "lost");
      if (out.closed) this.die(exited);
    });
    this.child.stdin!.on("error", () => {}); // EPIPE after death: reported by 'exit'
    out.on("data", (chunk: Buffer) => this.onData(chunk));
    out.on("close", () => {
      if (this.partial) this.onLine(this.partial.toString());
      this.partial = undefined;
      this.die(exited ?? new LeaseLost("governor bridge closed its output", 122, "lost"));
    });
    this.unref();
    this.ready = this.hello(session);
  }

  private async hello(session: string | undefined): Promise<void> {
    const r = await this.send("hello", { protocol: PROTOCOL, client: CLIENT, pid: process.pid, session });
    if (r.protocol !== PROTOCOL) {
      void this.close();
      throw new ProtocolError(
        `governor bridge speaks protocol ${r.protocol}, this client (${CLIENT}) speaks protocol ${PROTOCOL}`,
        125,
        "protocol",
      );
    }
    this.pid = r.pid;
    this.version = r.version;
    this.commit = r.commit ?? "";
    this.backend = r.backend;
    this.project = r.project;
    this.session = r.session;
    this.noreply = Array.isArray(r.features) && r.features.includes("noreply");
    this.isReady = true;
  }

  /**
   * Keep the event loop alive only while a request is outstanding or a
   * lease is held (Lease calls ref on grant, unrefOne on release or loss).
   */
  ref(): void {
    if (this.holds++ === 0) {
      this.child.ref();
      (this.child.stdout as any)?.ref?.();
    }
  }
  unrefOne(): void {
    if (--this.holds === 0) this.unref();
  }
  private unref(): void {
    this.child.unref();
    (this.child.stdout as any)?.unref?.();
    (this.child.stdin as any)?.unref?.();
  }

  /** Split stdout into lines: one JSON.parse per line, no stream of lines in between. */
  private onData(chunk: Buffer): void {
    let start = 0;
    let nl = chunk.indexOf(10);
    if (nl >= 0 && this.partial) {
      const head = Buffer.concat([this.partial, chunk.subarray(0, nl)]);
      this.partial = undefined;
      this.onLine(head.toString());
      start = nl + 1;
      nl = chunk.indexOf(10, start);
    }
    while (nl >= 0) {
      this.onLine(chunk.toString("utf8", start, nl));
      start = nl + 1;
      nl = chunk.indexOf(10, start);
    }
    if (start < chunk.length) this.partial = this.partial ? Buffer.concat([this.partial, chunk.subarray(start)]) : chunk.subarray(start);
  }

  private onLine(line: string): void {
    let msg: any;
    try {
      msg = JSON.parse(line);
    } catch {
      process.emitWarning(`governor bridge sent a line that is not JSON: ${line.slice(0, 200)}`);
      return;
    }
    if (typeof msg.id === "number") {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      this.unrefOne();
      if (msg.ok) p.resolve(msg.result ?? {});
      else p.reject(fromWire((msg.error ?? { code: 125, kind: "failure", message: "error without detail" }) as WireError));
      return;
    }
    if (typeof msg.event === "string") {
      // A loss can come before the code awaiting the acquire's reply made
      // its Lease (same read, or the next): kept for it (watch).
      if (msg.event === "lost" && typeof msg.lease === "string") {
        const w = this.watchers.get(msg.lease);
        if (w) w(msg);
        else this.keepLost(msg.lease, msg);
      }
      for (const l of this.listeners) l(msg as BridgeEvent);
    }
  }

  /**
   * Keep a lost event that came before its Lease was made: that Lease is
   * made when the acquire's reply resolves, in the microtasks that run
   * after the read that carried the reply (or the loss). Kept until the
   * event loop's next check phase (setImmediate), by then every such Lease
   * exists; a loss no Lease ever claims (a lease released before, or got
   * through call) is dropped then, not kept for the bridge's life.
   */
  private keepLost(id: string, e: BridgeEvent): void {
    this.lostLeases.set(id, e);
    if (this.lostSweep) return;
    this.lostSweep = true;
    setImmediate(() => {
      this.lostSweep = false;
      this.lostLeases.clear();
    });
  }

  /**
   * Tell w lease id's lost event and the bridge's exit, until the returned
   * function is called. A lost event that came before, or the bridge's
   * death, is told at once (then there is nothing to stop).
   */
  watch(id: string, w: (e: BridgeEvent) => void): () => void {
    const lost = this.lostLeases.get(id);
    const now = lost ?? (this.deadError && { event: "bridge_exit", reason: this.deadError.message });
    if (now) {
      this.lostLeases.delete(id);
      w(now);
      return () => {};
    }
    this.watchers.set(id, w);
    return () => {
      if (this.watchers.get(id) === w) this.watchers.delete(id);
    };
  }

  private die(err: GovernorError): void {
    if (this.deadError) return;
    this.deadError = err;
    for (const [, p] of this.pending) p.reject(err);
    this.pending.clear();
    const exit = { event: "bridge_exit", reason: err.message };
    const held = [...this.watchers.values()];
    this.watchers.clear();
    for (const w of held) w(exit);
    for (const l of this.listeners) l(exit);
  }

  /** Why the bridge is gone, or undefined while it lives. */
  get dead(): GovernorError | undefined {
    return this.deadError;
  }

  onEvent(l: (e: BridgeEvent) => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  /** Send a request; onId learns its id (to cancel it) before the reply comes. */
  send(op: string, args: Record<string, unknown>, onId?: (id: number) => void): Promise<any> {
    if (this.deadError) return Promise.reject(this.deadError);
    const id = this.nextId;
    let line: string;
    try {
      // JSON.stringify leaves out fields whose value is undefined.
      line = JSON.stringify({ id, op, args }, wire) + "\n";
    } catch (err) {
      return Promise.reject(err);
    }
    this.nextId++;
    onId?.(id);
    if (this.outbox) {
      line = this.outbox + line; // the releases before it, in one write
      this.outbox = "";
    }
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ref();
      this.child.stdin!.write(line);
    });
  }

  /**
   * Send a release not waited for (noreply): the bridge answers nothing when
   * it succeeds, runs every later request after it, and refuses the next
   * request waited for with its failure (bye, sent by close, carries what no
   * request took). Only once hello is answered (noreply).
   */
  sendQuiet(op: string, args: Record<string, unknown>): void {
    if (this.deadError) throw this.deadError;
    this.outbox += JSON.stringify({ id: this.nextId, op, args, noreply: true }, wire) + "\n";
    this.nextId++;
    this.quiet = true;
    if (!this.flushing) {
      this.flushing = true;
      setImmediate(this.flush);
    }
  }

  /** Write the releases not waited for that no request took along. */
  private readonly flush = (): void => {
    this.flushing = false;
    if (!this.outbox || this.deadError) return;
    const lines = this.outbox;
    this.outbox = "";
    this.child.stdin!.write(lines);
  };

  /** Send a request after hello (at once once hello is answered: no wait on a settled promise). */
  call(op: string, args: Record<string, unknown> = {}, onId?: (id: number) => void): Promise<any> {
    if (this.isReady) return this.send(op, args, onId);
    return this.ready.then(() => this.send(op, args, onId));
  }

  /** True once hello is answered and until the bridge dies. */
  get live(): boolean {
    return this.isReady && !this.deadError;
  }

  /**
   * End stdin: the bridge releases everything and exits; resolves on its exit.
   * After releases not waited for, it says bye first, and rejects with what
   * they owe (their failures no request took) once the bridge has exited.
   */
  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.ref(); // keep the process alive until the bridge is gone
    const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    let owed: unknown;
    if (this.quiet && !this.deadError) await this.send("bye", {}).catch((e) => (owed = e));
    this.child.stdin!.end();
    await exited;
    if (owed && !(owed instanceof LeaseLost && owed === this.deadError)) throw owed;
  }

  /** For tests: the bridge process. */
  get process(): ChildProcess {
    return this.child;
  }
}

