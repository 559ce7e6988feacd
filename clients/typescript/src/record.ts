// The wait record of withSlot(..., { record: PATH }): the grant and end
// lines of `governor run --record`, to a file opened (and checked as the CLI
// checks it) before the slot is asked for.
import { closeSync, constants, fstatSync, lstatSync, openSync, statSync, writeSync, type Stats } from "node:fs";
import { hostname } from "node:os";
import { dirname } from "node:path";
import { randomUUID } from "node:crypto";
import { GovernorError } from "./errors.js";

/** What the bridge's acquire result says of its resources for a record (docs/bridge-protocol.md). */
export interface RecordOf {
  resources: Record<string, unknown>[];
  nested?: boolean;
}

/**
 * Opens path for appending as `governor run --record` does: a symbolic link
 * as the last component is never followed, the open never blocks (a FIFO
 * with no reader), anything but a regular file is refused, as is a file
 * another user owns or can write. A file it creates is 0600. The refusal is
 * a GovernorError (125) naming the path and what is allowed.
 */
export function openRecord(path: string): number {
  const { O_WRONLY, O_APPEND, O_CREAT, O_NOFOLLOW, O_NONBLOCK } = constants;
  let fd: number;
  try {
    fd = openSync(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0o600);
  } catch (e) {
    let st: Stats | undefined;
    try {
      st = lstatSync(path);
    } catch {}
    if (st && !st.isFile()) throw notRegular(path, st);
    const err = e as NodeJS.ErrnoException;
    let hint = "";
    if (err.code === "ENOENT" && !isDir(dirname(path))) hint = ` (the folder ${dirname(path)} does not exist: create it first)`;
    throw new GovernorError(`record ${path}: ${err.code ?? err.message}${hint}`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw notRegular(path, st);
    const euid = process.geteuid?.() ?? st.uid;
    let why = "";
    if (st.uid !== 0 && st.uid !== euid) why = `owned by uid ${st.uid}, neither root nor you (uid ${euid})`;
    else if (st.mode & 0o022) why = `writable by group or others (mode ${(st.mode & 0o7777).toString(8).padStart(4, "0")})`;
    if (why)
      throw new GovernorError(
        `record ${path} is ${why}: another user could write or rewrite the records (and reads the lease ids and tokens they carry); ` +
          "refusing to append to it: give a file of your own that only you can write (chmod go-w), or a new path",
      );
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  return fd;
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function notRegular(path: string, st: Stats): GovernorError {
  const what = st.isSymbolicLink()
    ? "a symbolic link (not followed)"
    : st.isFIFO()
      ? "a FIFO"
      : st.isSocket()
        ? "a socket"
        : st.isCharacterDevice() || st.isBlockDevice()
          ? "a device"
          : st.isDirectory()
            ? "a directory"
            : "not a regular file";
  return new GovernorError(`record ${path} is ${what}; allowed: a regular file, or a path where one can be created`);
}

const now = () => new Date().toISOString().replace(/(\.\d{3})Z$/, "$1000Z");

/** One invocation's grant and end lines (as Python's slot(..., record=) writes them). */
export class WaitRecord {
  private fd: number;
  private readonly base: Record<string, unknown>;
  private readonly start = now();
  private readonly t0 = performance.now();
  private grantedAt = "";

  /** Opens path (openRecord): throws before anything is acquired. */
  constructor(readonly path: string, resources: string[]) {
    this.fd = openRecord(path);
    this.base = {
      id: randomUUID().replaceAll("-", ""),
      host: hostname(),
      pid: process.pid,
      command: "",
      resources: resources.map((name) => ({ name, weight: 1, limit: 0, nested: false })),
      nested: false,
      wait_seconds: 0,
    };
    const runs = (process.env.GOVERNOR_RUN_IDS ?? "").split(/\s+/).filter(Boolean);
    if (runs.length) this.base.outer_run = runs[runs.length - 1];
  }

  /** The process's command line as the bridge's redact op shows it (set before a line is written). */
  set command(line: string) {
    this.base.command = line;
  }

  granted(record: RecordOf | undefined, project: string, session: string): void {
    const b = this.base;
    b.project = project;
    b.session = session;
    b.wait_seconds = (performance.now() - this.t0) / 1000;
    if (record) {
      b.resources = record.resources;
      b.nested = Boolean(record.nested);
    }
    if (b.nested) b.wait_seconds = 0;
    this.grantedAt = now();
    this.write({ ...b, kind: "grant", start: this.start, granted: this.grantedAt });
  }

  /** The end line (err: what the acquire or the body threw); closes the file. */
  end(err: unknown): void {
    const [outcome, exit_code] = outcomeOf(err);
    const rec: Record<string, unknown> = { ...this.base, kind: "end", start: this.start, outcome, exit_code, end: now() };
    if (this.grantedAt) rec.granted = this.grantedAt;
    else rec.wait_seconds = (performance.now() - this.t0) / 1000;
    try {
      this.write(rec);
    } finally {
      this.close();
    }
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }

  /** One line in one write(2) on the O_APPEND descriptor: concurrent writers never interleave. */
  private write(rec: Record<string, unknown>): void {
    const line = Buffer.from(JSON.stringify(rec) + "\n");
    if (writeSync(this.fd, line) !== line.length) throw new Error(`record ${this.path}: a short write`);
  }
}

/** The end line of a slot whose acquire or body threw err: a failing write does not replace err. */
export function endRecord(rec: WaitRecord, err: unknown): void {
  try {
    rec.end(err);
  } catch {
    // err is the one to tell
  }
}

function outcomeOf(err: unknown): [string, number] {
  if (err === undefined) return ["ran", 0];
  if (err instanceof GovernorError) {
    const byKind: Record<string, string> = { busy: "busy", withdrawn: "busy", skipped: "skipped", superseded: "superseded", lost: "lease_lost" };
    return [byKind[err.kind] ?? "error", err.code];
  }
  return ["ran", 1];
}
