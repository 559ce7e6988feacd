// One `governor bridge` co-process: newline-delimited JSON requests with ids,
// replies, and pushed events (docs/bridge-protocol.md).
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { BackendError, fromWire, GovernorError, LeaseLost, ProtocolError, type WireError } from "./errors.js";

/** The protocol number this client speaks. */
export const PROTOCOL = 1;
export const CLIENT = "typescript/0.1.0";

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

/** Live bridges, killed when this process exits (their stdin EOF would also release everything). */
const live = new Set<ChildProcess>();
let exitHook = false;
function killAllOnExit(): void {
  if (exitHook) return;
  exitHook = true;
  process.on("exit", () => {
    for (const child of live) child.kill("SIGKILL");
  });
}

export class Bridge {
  private child: ChildProcess;
  private nextId = 1;
  private pending = new Map<number, Pending>();
  private listeners = new Set<(e: BridgeEvent) => void>();
  private lostLeases = new Map<string, BridgeEvent>();
  private holds = 0;
  private deadError: GovernorError | undefined;
  /** The bridge's pid and governor version, from hello. */
  pid = 0;
  version = "";
  backend = "";
  project = "";
  session = "";
  readonly ready: Promise<void>;

  constructor(bin: string, args: string[], env: NodeJS.ProcessEnv, session?: string) {
    this.child = spawn(bin, ["bridge", ...args], { stdio: ["pipe", "pipe", "inherit"], env });
    live.add(this.child);
    killAllOnExit();
    this.child.on("error", (err) => this.die(new BackendError(`governor bridge (${bin}): ${err.message}`)));
    this.child.on("exit", (code, sig) => {
      live.delete(this.child);
      this.die(new LeaseLost(`governor bridge exited (${sig ?? `code ${code}`})`, 122, "lost"));
    });
    this.child.stdin!.on("error", () => {}); // EPIPE after death: reported by 'exit'
    const lines = createInterface({ input: this.child.stdout! });
    lines.on("line", (line) => this.onLine(line));
    lines.on("close", () => this.die(new LeaseLost("governor bridge closed its output", 122, "lost")));
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
    this.backend = r.backend;
    this.project = r.project;
    this.session = r.session;
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
      // its Lease (same read, or the next): kept for it (takeLost).
      if (msg.event === "lost" && typeof msg.lease === "string") this.lostLeases.set(msg.lease, msg);
      for (const l of this.listeners) l(msg as BridgeEvent);
    }
  }

  /** The lost event of lease id, if one came (and forget it). */
  takeLost(id: string): BridgeEvent | undefined {
    const e = this.lostLeases.get(id);
    this.lostLeases.delete(id);
    return e;
  }

  private die(err: GovernorError): void {
    if (this.deadError) return;
    this.deadError = err;
    for (const [, p] of this.pending) p.reject(err);
    this.pending.clear();
    for (const l of this.listeners) l({ event: "bridge_exit", reason: err.message });
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
    const id = this.nextId++;
    onId?.(id);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ref();
      this.child.stdin!.write(JSON.stringify({ id, op, args: dropUndefined(args) }) + "\n");
    });
  }

  /** Send a request after hello. */
  async call(op: string, args: Record<string, unknown> = {}, onId?: (id: number) => void): Promise<any> {
    await this.ready;
    return this.send(op, args, onId);
  }

  /** End stdin: the bridge releases everything and exits; resolves on its exit. */
  close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve();
    this.ref(); // keep the process alive until the bridge is gone
    return new Promise((resolve) => {
      this.child.once("exit", () => resolve());
      this.child.stdin!.end();
    });
  }

  /** For tests: the bridge process. */
  get process(): ChildProcess {
    return this.child;
  }
}

function dropUndefined(o: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
  return out;
}
