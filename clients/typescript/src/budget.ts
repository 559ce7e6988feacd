// Spend budgets: Budget (given inline with a slot or a provider gate),
// Price and Usage, and usageFromJSON, which reads a provider response's
// usage as Go's governor.UsageFromJSON does (docs/budgets.md).
import type { Duration } from "./options.js";

/** A spend budget: at most limit (in unit) per window, for every process. */
export interface Budget {
  /** The budget's name ([A-Za-z0-9._:-], at most 200 characters). */
  name: string;
  /** The most spent plus reserved in one window, in unit. */
  limit: number | string;
  /** "USD" (the default), "tokens", any cost unit. */
  unit?: string;
  /** Fixed windows of this length, aligned on the Unix epoch: "24h", or milliseconds. */
  per?: Duration;
  /** Instead of per: calendar days or months in tz (an IANA zone; default UTC). */
  calendar?: "day" | "month";
  tz?: string;
  /** A threshold below limit whose crossing is recorded as an event. */
  soft?: number | string;
}

/** A budget as a reservation left it, or as it refused (GovernorError.budget). Amounts in its unit. */
export interface BudgetState {
  name: string;
  unit?: string;
  spent: number;
  reserved: number;
  limit: number;
  /** When the window resets (RFC 3339). */
  reset: string;
  /** Why it refused: "exhausted", "paused" or "held". */
  reason?: string;
  /** The refused call's estimate. */
  estimate?: number;
}

/** What a provider's response says a call used; inputTokens excludes cachedInputTokens. */
export interface Usage {
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
}

const int = (v: unknown): number | undefined => (Number.isSafeInteger(v) ? (v as number) : undefined);

/**
 * The usage of a response body (a string, bytes, or the parsed object) in
 * the shapes of Anthropic's Messages API and OpenAI's Chat Completions and
 * Responses APIs, as Go's governor.UsageFromJSON reads them; undefined when
 * it has none it can read (then settle at the estimate, never at zero).
 */
export function usageFromJSON(body: unknown): Usage | undefined {
  if (typeof body === "string" || body instanceof Uint8Array) {
    try {
      body = JSON.parse(typeof body === "string" ? body : new TextDecoder().decode(body));
    } catch {
      return undefined;
    }
  }
  const u = (body as { usage?: unknown } | null)?.usage as Record<string, unknown> | undefined;
  if (!u || typeof u !== "object") return undefined;
  const cached = (k: string) => int((u[k] as Record<string, unknown> | undefined)?.cached_tokens) ?? 0;
  const prompt = int(u.prompt_tokens), completion = int(u.completion_tokens);
  const input = int(u.input_tokens), output = int(u.output_tokens);
  let r: Usage;
  if (prompt !== undefined && completion !== undefined) {
    const c = cached("prompt_tokens_details"); // OpenAI chat: prompt includes cached
    r = { inputTokens: prompt - c, cachedInputTokens: c, outputTokens: completion };
  } else if (input !== undefined && output !== undefined) {
    const c = cached("input_tokens_details");
    r = c > 0
      ? { inputTokens: input - c, cachedInputTokens: c, outputTokens: output } // OpenAI responses: input includes cached
      : { inputTokens: input + (int(u.cache_creation_input_tokens) ?? 0), cachedInputTokens: int(u.cache_read_input_tokens) ?? 0, outputTokens: output };
  } else {
    return undefined;
  }
  return Math.min(r.inputTokens, r.cachedInputTokens, r.outputTokens) < 0 ? undefined : r;
}

const MICRO = 1_000_000;

/**
 * A provider's or model's price, in the budget's unit per million tokens
 * (new Price({ input: 3, output: 15, cachedInput: 0.3 }) for $3/$15/$0.30),
 * plus perCall. It computes in millionths rounded up, as Go's
 * governor.Price, so that the two agree to the last one.
 */
export class Price {
  readonly input: number;
  readonly output: number;
  readonly cachedInput: number;
  readonly perCall: number;

  constructor(p: { input?: number; output?: number; cachedInput?: number; perCall?: number }) {
    for (const [k, v] of Object.entries(p)) {
      if (v !== undefined && !(typeof v === "number" && v >= 0 && v < 1e9))
        throw new RangeError(`price ${k} ${v}: want 0 or more (units per million tokens)`);
    }
    this.input = p.input ?? 0;
    this.output = p.output ?? 0;
    this.cachedInput = p.cachedInput ?? 0;
    this.perCall = p.perCall ?? 0;
  }

  /** What usage costs at this price, in units (rounded up to a millionth). */
  cost(u: { [K in keyof Usage]: number | bigint }): number {
    const m = (v: number) => BigInt(Math.round(v * MICRO));
    const tok = BigInt(u.inputTokens) * m(this.input) + BigInt(u.cachedInputTokens) * m(this.cachedInput) + BigInt(u.outputTokens) * m(this.output);
    return Number((tok + BigInt(MICRO - 1)) / BigInt(MICRO) + m(this.perCall)) / MICRO;
  }

  /** The upper bound of a call's cost: every input token uncached, and all of maxTokens of output. */
  estimate(inputTokens: number | bigint, maxTokens: number | bigint): number {
    return this.cost({ inputTokens, cachedInputTokens: 0, outputTokens: maxTokens });
  }
}
