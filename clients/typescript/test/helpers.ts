// Test helpers: a governor binary, a backend (file dir or a redis-server on
// a random port), worker processes, and work-interval files.
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, chmodSync, existsSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { findBinary } from "../src/index.js";

export const here = dirname(fileURLToPath(import.meta.url));
export const root = join(here, "..", "..");

/** The governor binary under test: $GOVERNOR_BIN, else the installed platform package's (as the client finds it). */
export function governorBin(): string {
  return findBinary();
}

export function tmp(prefix = "gov-ts-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

// The bridges of these tests keep their machine state (the Redis loss
// witness, one per server URL) in a dir of their own. In the user's, shared
// with earlier runs, a fresh redis-server on a port an earlier one used
// reads as that server's data lost.
process.env.XDG_STATE_HOME = tmp("governor-ts-state-");

/** A GOVERNOR_BIN that runs the fake bridge with env. */
export function fakeBin(env: Record<string, string> = {}): string {
  const dir = tmp("gov-fake-");
  const bin = join(dir, "governor");
  const vars = Object.entries(env).map(([k, v]) => `${k}='${v.replace(/'/g, "'\\''")}' `).join("");
  writeFileSync(bin, `#!/bin/sh\n[ "$1" = bridge ] || exit 2\nshift\nexec env ${vars}${process.execPath} ${join(here, "fake-bridge.js")} "$@"\n`);
  chmodSync(bin, 0o755);
  return bin;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface Backend {
  name: string;
  /** Environment selecting it for a bridge or the CLI. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** The file backend in a fresh directory. */
export function fileBackend(): Backend {
  const dir = tmp("gov-dir-");
  return { name: "file", env: { GOVERNOR_DIR: dir, GOVERNOR_BACKEND: "file" }, stop: async () => {} };
}

function redisServer(): string | undefined {
  for (const d of (process.env.PATH ?? "").split(":")) if (existsSync(join(d, "redis-server"))) return join(d, "redis-server");
  return undefined;
}

/** A redis-server the test starts on 127.0.0.1 (random port); undefined when there is none and GOVERNOR_REQUIRE_REDIS is unset. */
export async function redisBackend(): Promise<RedisBackend | undefined> {
  const server = redisServer();
  if (!server) {
    if (process.env.GOVERNOR_REQUIRE_REDIS === "1") throw new Error("redis-server not on PATH and GOVERNOR_REQUIRE_REDIS=1");
    return undefined;
  }
  const port = await freePort();
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tmp("gov-redis-")];
  let child = await startRedis(server, args);
  const stop = (sig: NodeJS.Signals = "SIGTERM"): Promise<void> =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.kill(sig);
    });
  return {
    name: "redis",
    env: { GOVERNOR_REDIS_URL: `redis://127.0.0.1:${port}/0`, GOVERNOR_BACKEND: "redis" },
    stop: () => stop(),
    command: (...words: string[]) => redisCommand(port, words),
    restart: async () => {
      await stop("SIGKILL");
      child = await startRedis(server, args);
    },
  };
}

/** A redis-server of the tests': what losing its data takes. */
export interface RedisBackend extends Backend {
  /** One command; the first line of its reply ("+OK"). */
  command(...words: string[]): Promise<string>;
  /** Killed and started again on its port: without persistence, its data is gone. */
  restart(): Promise<void>;
}

async function startRedis(server: string, args: string[]): Promise<ChildProcess> {
  const child = spawn(server, args, { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (l) => {
      if (l.includes("Ready to accept connections")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`redis-server exited (${code}) before it was ready`)));
  });
  child.stdout!.resume();
  return child;
}

function redisCommand(port: number, words: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = createConnection({ host: "127.0.0.1", port });
    let reply = "";
    c.on("data", (d) => {
      reply += d.toString();
      const end = reply.indexOf("\r\n");
      if (end >= 0) {
        c.end();
        resolve(reply.slice(0, end));
      }
    });
    c.on("error", reject);
    c.write(`*${words.length}\r\n` + words.map((w) => `$${Buffer.byteLength(w)}\r\n${w}\r\n`).join(""));
  });
}

/** Each backend to run a test on. */
export async function backends(): Promise<Backend[]> {
  const r = await redisBackend();
  return r ? [fileBackend(), r] : [fileBackend()];
}

let projects = 0;
/** A project name of its own for each test (one redis-server serves them all). */
export function project(): string {
  return `ts-${process.pid}-${++projects}`;
}

/** A worker process (dist/test/worker.js) and its stdout lines. */
export class Worker {
  readonly child: ChildProcess;
  private lines: string[] = [];
  private waiters: { prefix: string; resolve(l: string): void; reject(e: Error): void }[] = [];
  readonly exited: Promise<number | null>;
  readonly env: Record<string, string>;

  constructor(env: Record<string, string>) {
    this.env = env;
    this.child = spawn(process.execPath, [join(here, "worker.js")], {
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...process.env, ...env },
    });
    createInterface({ input: this.child.stdout! }).on("line", (l) => {
      this.lines.push(l);
      this.waiters = this.waiters.filter((w) => {
        if (!l.startsWith(w.prefix)) return true;
        w.resolve(l);
        return false;
      });
    });
    this.exited = new Promise((resolve) => this.child.once("exit", (code) => {
      for (const w of this.waiters) w.reject(new Error(`worker exited (${code}) before printing "${w.prefix}"; it printed: ${this.lines.join(" | ")}`));
      this.waiters = [];
      resolve(code);
    }));
  }

  /** The first line starting with prefix (already printed or to come); fails after ms. */
  line(prefix: string, ms = 30_000): Promise<string> {
    const seen = this.lines.find((l) => l.startsWith(prefix));
    if (seen) return Promise.resolve(seen);
    if (this.child.exitCode !== null || this.child.signalCode !== null)
      return Promise.reject(new Error(`worker exited before printing "${prefix}": ${this.lines.join(" | ")}`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker did not print "${prefix}" within ${ms} ms; it printed: ${this.lines.join(" | ")}`)), ms);
      this.waiters.push({ prefix, resolve: (l) => (clearTimeout(timer), resolve(l)), reject: (e) => (clearTimeout(timer), reject(e)) });
    });
  }

  kill(sig: NodeJS.Signals = "SIGKILL"): void {
    this.child.kill(sig);
  }
}

/** Monotonic nanoseconds, comparable across processes of this host (CLOCK_MONOTONIC). */
export function mono(): bigint {
  return process.hrtime.bigint();
}

export interface Interval {
  who: string;
  start: bigint;
  end: bigint;
  token: number;
}

/** The intervals of a work-interval file: "S WHO MONO TOKEN" ... "E WHO MONO" (T lines: body still running). */
export function intervals(path: string): { done: Interval[]; open: string[]; lastT: Map<string, bigint> } {
  const open = new Map<string, { start: bigint; token: number }>();
  const lastT = new Map<string, bigint>();
  const done: Interval[] = [];
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (!line) continue;
    const [kind, who, t, token] = line.split(" ");
    const at = BigInt(t);
    if (kind === "S") open.set(who, { start: at, token: Number(token) });
    else if (kind === "T") lastT.set(who, at);
    else if (kind === "E") {
      const s = open.get(who);
      if (!s) throw new Error(`E without S for ${who}`);
      open.delete(who);
      done.push({ who, start: s.start, end: at, token: s.token });
    }
  }
  done.sort((a, b) => (a.start < b.start ? -1 : 1));
  return { done, open: [...open.keys()], lastT };
}

/** The first pair of intervals that overlap, if any (limit 1). */
export function overlap(iv: Interval[]): [Interval, Interval] | undefined {
  for (let i = 1; i < iv.length; i++) if (iv[i].start < iv[i - 1].end) return [iv[i - 1], iv[i]];
  return undefined;
}

const execFileP = promisify(execFile);
/** Run the governor CLI with a backend's environment. */
export async function cli(env: Record<string, string>, ...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return execFileP(governorBin(), args, { env: { ...process.env, ...env } });
}
