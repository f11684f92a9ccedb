import type { ChainPolicy } from "../src/kernel/index.ts";
import type { SandboxLimits } from "./sandbox-driver.ts";

/**
 * Largest JSON text of one call's arguments when the caller sets none: 1 MiB. Bigger inputs
 * belong in the blob store, passed as `artifact(ref)`.
 */
export const DEFAULT_MAX_ARGUMENT_BYTES = 1_048_576;

/** Options of {@link sandboxLimitsFromPolicy}. */
export interface SandboxLimitsOptions {
  /** @defaultValue {@link DEFAULT_MAX_ARGUMENT_BYTES} */
  readonly maxArgumentBytes?: number;
}

/**
 * The sandbox caps of a chain run under `policy`: memory, CPU, wall time and output come from
 * the policy; the argument cap (not a policy field) from `options`. Frozen.
 */
export function sandboxLimitsFromPolicy(policy: ChainPolicy, options: SandboxLimitsOptions = {}): SandboxLimits {
  return Object.freeze({
    memoryLimitMb: policy.memoryLimitMb,
    cpuTimeMs: policy.cpuTimeMs,
    totalTimeoutMs: policy.totalTimeoutMs,
    maxOutputBytes: policy.maxOutputBytes,
    maxArgumentBytes: options.maxArgumentBytes ?? DEFAULT_MAX_ARGUMENT_BYTES,
  });
}

/**
 * What the model can change when a run hits a limit: the limit errors name the limit and its
 * value, then this (the host's own operator can raise the limit; the model cannot).
 */
export const LIMIT_HINTS = {
  timeout: "Do less in one chain (fewer or faster calls; independent calls together with Promise.all), or split the work across chains.",
  cpu: "A loop that never ends, or computation too heavy for a script? Bound the loop, or leave heavy work to a tool.",
  memory: "The script holds too much data: keep large results as artifact refs, work through data in pieces, and return less.",
  calls: "Each call past the budget is refused: check budget.remaining before calling, and stop when a call comes back BUDGET_EXCEEDED.",
} as const;
