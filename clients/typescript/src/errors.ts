// Errors named for what happened, each carrying the CLI's exit code (busy 73,
// skipped 75, superseded 76, lost 122, timeout 124, failure 125) and message.
import type { BudgetState } from "./budget.js";

/** A reply's error object as the bridge sends it (docs/bridge-protocol.md). */
export interface WireError {
  code: number;
  kind: string;
  message: string;
  [detail: string]: unknown;
}

/** Base class: every error from governor has the CLI's exit code and kind. */
export class GovernorError extends Error {
  readonly code: number;
  readonly kind: string;
  /** The rest of the bridge's error object (holders, until, ...). */
  readonly details: Record<string, unknown>;
  constructor(message: string, code = 125, kind = "failure", details: Record<string, unknown> = {}) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.kind = kind;
    this.details = details;
  }
  /** The holders the CLI prints when busy (empty when the bridge sent none). */
  get holders(): unknown[] {
    const h = this.details.holders;
    return Array.isArray(h) ? h : [];
  }
  /** The spend budget that refused (name, spent, reserved, limit, reset, ...), when one did. */
  get budget(): BudgetState | undefined {
    return this.details.budget as BudgetState | undefined;
  }
}

/** The resource was full (--if-busy fail), the wait timed out, or the queue policy refused (73). */
export class Busy extends GovernorError {}
/** The resource was full with ifBusy "skip" (75). */
export class Skipped extends GovernorError {}
/** The wait was cancelled by `governor cancel` or by the caller's signal. */
export class Withdrawn extends GovernorError {}
/** A newer acquire with the same supersede key replaced this waiting one (76). */
export class Superseded extends GovernorError {}
/** A held lease was lost: expired, taken over, cancelled, or the bridge died (122). */
export class LeaseLost extends GovernorError {}
/**
 * The backend (Redis, the state directory) or the bridge failed (125): worth
 * retrying later. Bad input and bad configuration (kind "failure", 125) are
 * a plain GovernorError, as in the Python client: retrying them cannot help.
 */
export class BackendError extends GovernorError {}
/** The bridge speaks another protocol version than this client. */
export class ProtocolError extends GovernorError {}

const byKind: Record<string, typeof GovernorError> = {
  busy: Busy,
  timeout: Busy,
  skipped: Skipped,
  withdrawn: Withdrawn,
  cancelled: Withdrawn,
  superseded: Superseded,
  lost: LeaseLost,
  protocol: ProtocolError,
  backend: BackendError,
  failure: GovernorError,
};

const byCode: Record<number, typeof GovernorError> = {
  73: Busy,
  75: Skipped,
  76: Superseded,
  122: LeaseLost,
  124: Busy,
  125: BackendError,
};

/** The error class for a bridge reply's error object. */
export function fromWire(e: WireError): GovernorError {
  const { code, kind, message, ...details } = e;
  const cls = byKind[kind] ?? byCode[code] ?? BackendError;
  return new cls(message ?? `governor: ${kind} (${code})`, code ?? 125, kind ?? "failure", details);
}
