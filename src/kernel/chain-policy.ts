import { ChainRuntimeError } from "./errors.ts";
import { isToolRisk, type ToolRisk } from "./tool-risk.ts";
import { editDistance } from "./suggest-names.ts";

/** The limits of one chain. Every field has a default in {@link DEFAULT_CHAIN_POLICY}. */
export interface ChainPolicy {
  /** Tool calls one chain (or one invoker session) may make, at most {@link MAX_TOOL_CALLS}. @defaultValue 50 */
  readonly maxToolCalls: number;
  /** Longest a single tool's `execute` may run before its signal fires. @defaultValue 60_000 */
  readonly callTimeoutMs: number;
  /** Longest a whole chain may run, awaiting included. @defaultValue 300_000 */
  readonly totalTimeoutMs: number;
  /**
   * Longest to wait for a human; must be below `callTimeoutMs`. @defaultValue 55_000, or 11/12 of
   * `callTimeoutMs` when a policy sets that below 60 000 and leaves this out
   */
  readonly approvalTimeoutMs: number;
  /** Results up to this many UTF-8 bytes come back inline; larger ones become artifacts. @defaultValue 4096 */
  readonly maxInlineResultBytes: number;
  /** Highest risk that runs without approval. `critical` always needs it. @defaultValue "safe" */
  readonly maxRiskUnapproved: ToolRisk;
  /** Heap limit of the script's isolate, in MiB, from 8 to {@link MAX_MEMORY_LIMIT_MB}. @defaultValue 128 */
  readonly memoryLimitMb: number;
  /** CPU time the script itself may use. @defaultValue 10_000 */
  readonly cpuTimeMs: number;
  /** Console output kept, in bytes; more is truncated with a marker. @defaultValue 65_536 */
  readonly maxOutputBytes: number;
  /** Tool calls of one chain running at once on the host; the rest queue. @defaultValue 8 */
  readonly maxConcurrentCalls: number;
}

/** The defaults. Frozen. */
export const DEFAULT_CHAIN_POLICY: ChainPolicy = Object.freeze({
  maxToolCalls: 50,
  callTimeoutMs: 60_000,
  totalTimeoutMs: 300_000,
  approvalTimeoutMs: 55_000,
  maxInlineResultBytes: 4096,
  maxRiskUnapproved: "safe",
  memoryLimitMb: 128,
  cpuTimeMs: 10_000,
  maxOutputBytes: 65_536,
  maxConcurrentCalls: 8,
});

/**
 * Longest duration a policy field may set, ms: 2^31 - 1 (about 24.8 days), the longest timer
 * Node.js can set; a longer one fires after 1 ms instead.
 */
export const MAX_POLICY_DURATION_MS = 2_147_483_647;

/** Most tool calls a policy may allow one chain: far past any chain's need, short of a unit slip. */
export const MAX_TOOL_CALLS = 1_000_000;

/**
 * Largest `memoryLimitMb`: 16 GiB. The limit is in MiB; a value in bytes (134 217 728 for 128
 * MiB) would leave the isolate's heap unbounded in practice, so it is refused.
 */
export const MAX_MEMORY_LIMIT_MB = 16_384;

/** Integer fields and their range (an upper bound, where there is one: a timer's, or a slip's). */
const INTEGER_FIELDS = [
  ["maxToolCalls", 0, MAX_TOOL_CALLS],
  ["callTimeoutMs", 1, MAX_POLICY_DURATION_MS],
  ["totalTimeoutMs", 1, MAX_POLICY_DURATION_MS],
  ["approvalTimeoutMs", 1, MAX_POLICY_DURATION_MS],
  ["maxInlineResultBytes", 0],
  ["memoryLimitMb", 8, MAX_MEMORY_LIMIT_MB],
  ["cpuTimeMs", 1, MAX_POLICY_DURATION_MS],
  ["maxOutputBytes", 0],
  ["maxConcurrentCalls", 1],
] as const satisfies readonly (readonly [keyof ChainPolicy, number, number?])[];

/** What a field's upper bound means, after its range in the message. */
const RANGE_NOTES: Partial<Record<keyof ChainPolicy, string>> = {
  memoryLimitMb: " (MiB, not bytes: 128 is 128 MiB)",
  callTimeoutMs: ` (ms; ${MAX_POLICY_DURATION_MS} is about 24.8 days, the longest timer Node.js can set)`,
  totalTimeoutMs: ` (ms; ${MAX_POLICY_DURATION_MS} is about 24.8 days, the longest timer Node.js can set)`,
  approvalTimeoutMs: ` (ms; ${MAX_POLICY_DURATION_MS} is about 24.8 days, the longest timer Node.js can set)`,
  cpuTimeMs: ` (ms; ${MAX_POLICY_DURATION_MS} is about 24.8 days, the longest timer Node.js can set)`,
};

/**
 * Merges `overrides` over {@link DEFAULT_CHAIN_POLICY}, checks every field and returns a frozen
 * policy. Throws `ChainRuntimeError` `POLICY_INVALID` naming the field when one is out of range
 * or unknown (a misspelt field would otherwise be ignored without a word),
 * or when `approvalTimeoutMs >= callTimeoutMs` (an approval must be able to time out before the
 * call does).
 */
export function resolveChainPolicy(overrides: Partial<ChainPolicy> = {}): ChainPolicy {
  if (typeof overrides !== "object" || overrides === null || Array.isArray(overrides)) {
    throw new ChainRuntimeError("POLICY_INVALID", `A policy is an object of ChainPolicy fields; got ${overrides === null ? "null" : Array.isArray(overrides) ? "an array" : typeof overrides}.`);
  }
  for (const key of Object.keys(overrides)) {
    if (!Object.hasOwn(DEFAULT_CHAIN_POLICY, key)) {
      const near = closestPolicyField(key);
      throw new ChainRuntimeError(
        "POLICY_INVALID",
        `ChainPolicy has no field ${JSON.stringify(key)}${near === undefined ? "" : `; did you mean ${near}?`} (fields: ${Object.keys(DEFAULT_CHAIN_POLICY).join(", ")}).`,
        { details: { field: key } },
      );
    }
  }
  const given = stripUndefined(overrides);
  // A shorter call timeout alone brings the approval wait down with it (the default would be refused).
  const call = given.callTimeoutMs;
  const derived =
    given.approvalTimeoutMs === undefined && typeof call === "number" && call < DEFAULT_CHAIN_POLICY.callTimeoutMs
      ? { approvalTimeoutMs: Math.max(1, call - Math.ceil(call / 12)) }
      : {};
  const policy: ChainPolicy = { ...DEFAULT_CHAIN_POLICY, ...given, ...derived };
  for (const [field, min, max] of INTEGER_FIELDS as readonly (readonly [keyof ChainPolicy, number, number?])[]) {
    const value = policy[field];
    if (typeof value !== "number" || !Number.isInteger(value) || value < min || (max !== undefined && value > max)) {
      const range = max === undefined ? `>= ${min}` : `from ${min} to ${max}${RANGE_NOTES[field] ?? ""}`;
      throw new ChainRuntimeError(
        "POLICY_INVALID",
        `ChainPolicy.${field} must be an integer ${range}; got ${typeof value === "string" ? JSON.stringify(value) : String(value)}.`,
        { details: { field, value } },
      );
    }
  }
  if (!isToolRisk(policy.maxRiskUnapproved)) {
    throw new ChainRuntimeError(
      "POLICY_INVALID",
      `ChainPolicy.maxRiskUnapproved must be "safe", "high" or "critical"; got ${typeof policy.maxRiskUnapproved === "string" ? JSON.stringify(policy.maxRiskUnapproved) : String(policy.maxRiskUnapproved)}.`,
      { details: { field: "maxRiskUnapproved", value: policy.maxRiskUnapproved } },
    );
  }
  if (policy.approvalTimeoutMs >= policy.callTimeoutMs && derived.approvalTimeoutMs !== undefined) {
    throw new ChainRuntimeError(
      "POLICY_INVALID",
      `ChainPolicy.callTimeoutMs (${policy.callTimeoutMs}) leaves no time for an approval wait, which must be at least 1 ms and below it: set callTimeoutMs to 2 or more.`,
      { details: { field: "callTimeoutMs", value: policy.callTimeoutMs } },
    );
  }
  if (policy.approvalTimeoutMs >= policy.callTimeoutMs) {
    throw new ChainRuntimeError(
      "POLICY_INVALID",
      `ChainPolicy.approvalTimeoutMs (${policy.approvalTimeoutMs}) must be below callTimeoutMs (${policy.callTimeoutMs}), ` +
        "so a pending approval is denied before the call itself times out.",
      { details: { field: "approvalTimeoutMs", value: policy.approvalTimeoutMs, callTimeoutMs: policy.callTimeoutMs } },
    );
  }
  return Object.freeze(policy);
}

/**
 * `overrides` over `base` (a resolved policy, or a recorded one), checked as
 * {@link resolveChainPolicy} checks a policy. A `callTimeoutMs` override that the base's approval
 * wait does not fit under, with no `approvalTimeoutMs` of its own, brings the approval wait down
 * as a policy that sets `callTimeoutMs` alone does (`openSession({ policy: { callTimeoutMs } })`).
 */
export function overrideChainPolicy(base: Partial<ChainPolicy>, overrides: Partial<ChainPolicy> = {}): ChainPolicy {
  if (typeof overrides !== "object" || overrides === null || Array.isArray(overrides)) return resolveChainPolicy(overrides);
  const given = stripUndefined(overrides);
  const merged: Partial<ChainPolicy> = { ...base, ...given };
  const call = given.callTimeoutMs;
  if (given.approvalTimeoutMs === undefined && typeof call === "number" && (base.approvalTimeoutMs ?? DEFAULT_CHAIN_POLICY.approvalTimeoutMs) >= call) {
    delete (merged as { approvalTimeoutMs?: number }).approvalTimeoutMs;
  }
  return resolveChainPolicy(merged);
}

/**
 * The fields of `policy` that {@link ChainPolicy} has: a policy recorded by another version (a
 * trace) may carry fields this one does not know, which {@link resolveChainPolicy} refuses.
 */
export function knownPolicyFields(policy: object): Partial<ChainPolicy> {
  const known: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(policy)) if (Object.hasOwn(DEFAULT_CHAIN_POLICY, key)) known[key] = value;
  return known as Partial<ChainPolicy>;
}

/**
 * A recorded policy (a trace's) as a check or a new run takes it: a field over an upper bound
 * added since traces were first written (`maxToolCalls` over {@link MAX_TOOL_CALLS},
 * `memoryLimitMb` over {@link MAX_MEMORY_LIMIT_MB}) is brought down to that bound, so a trace
 * recorded under such a policy still loads, replays and resumes. Whole numbers only: anything
 * else is left for {@link resolveChainPolicy} to refuse.
 */
export function recordedChainPolicy(policy: Partial<ChainPolicy>): Partial<ChainPolicy> {
  const out: Record<string, unknown> = { ...policy };
  for (const [field, max] of [
    ["maxToolCalls", MAX_TOOL_CALLS],
    ["memoryLimitMb", MAX_MEMORY_LIMIT_MB],
  ] as const) {
    const value = out[field];
    if (Number.isInteger(value) && (value as number) > max) out[field] = max;
  }
  return out as Partial<ChainPolicy>;
}

/** The policy field closest to `key` (case-insensitive edit distance at most 2), if any. */
function closestPolicyField(key: string): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const field of Object.keys(DEFAULT_CHAIN_POLICY)) {
    const distance = editDistance(key.toLowerCase(), field.toLowerCase(), 2);
    if (distance < bestDistance) {
      best = field;
      bestDistance = distance;
    }
  }
  return best;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [key, field] of Object.entries(value)) {
    if (field !== undefined) (out as Record<string, unknown>)[key] = field;
  }
  return out;
}
