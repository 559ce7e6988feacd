// A provider gate: the provider's concurrency slot and rate reservation
// around one call, and the call's outcome reported (a 429 or 529 cools the
// provider off for every process).
import type { AcquireOptions, Governor } from "./governor.js";
import { goDuration } from "./governor.js";
import { Lease } from "./lease.js";

export interface ProviderRunOptions extends AcquireOptions {
  /** Tokens to reserve from the provider's tokens_per_minute budget. */
  tokens?: number;
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

  constructor(gov: Governor, name: string) {
    this.gov = gov;
    this.name = name;
  }

  /**
   * Run fn inside the gate: waits for a concurrency slot and the rate budget
   * (and any cool-off), runs fn with the lease (lease.signal aborts on loss),
   * reports the outcome, releases. A fetch Response (or an error with
   * .status / .response) of 429 or 529 is reported as a rate-limit signal with
   * its headers (retry-after, ...).
   */
  async run<T>(fn: (lease: Lease) => Promise<T> | T, opts: ProviderRunOptions = {}): Promise<T> {
    const lease = await this.gov.acquire(`provider:${this.name}`, { wait: true, ...opts, tokens: opts.tokens } as AcquireOptions);
    try {
      let result: T;
      try {
        result = await fn(lease);
      } catch (err) {
        await this.report(httpOf(err), lease);
        throw err;
      }
      await this.report(httpOf(result), lease);
      return result;
    } finally {
      await lease.release();
    }
  }

  /** Report one call's outcome: an HTTP status and headers, or ok when there is none. */
  async report(http: HttpLike | undefined, lease?: Lease): Promise<void> {
    const args: Record<string, unknown> = { provider: this.name, lease: lease?.id };
    if (http && (http.status === 429 || http.status === 529)) {
      args.outcome = "rate_limited";
      args.status = http.status;
      args.headers = headerObject(http.headers);
    } else {
      args.outcome = "ok";
      if (http) args.status = http.status;
    }
    await this.gov.call("provider_report", args);
  }

  /** Report a rate-limit signal by hand: the provider cools off for retryAfter (default: the CLI's). */
  async backoff(retryAfter?: number | string): Promise<void> {
    await this.gov.call("provider_report", { provider: this.name, outcome: "rate_limited", retry_after: goDuration(retryAfter) });
  }
}
