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
