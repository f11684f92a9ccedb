import { describe, expect, it } from "vitest";
import { resolveChainPolicy } from "../../src/kernel/index.ts";
import { DEFAULT_MAX_ARGUMENT_BYTES, sandboxLimitsFromPolicy } from "../../sandbox/limits.ts";

describe("sandboxLimitsFromPolicy", () => {
  it("maps the policy's caps and defaults the argument cap", () => {
    const policy = resolveChainPolicy({ memoryLimitMb: 64, cpuTimeMs: 50, totalTimeoutMs: 70, maxOutputBytes: 9 });
    expect(sandboxLimitsFromPolicy(policy)).toEqual({
      memoryLimitMb: 64,
      cpuTimeMs: 50,
      totalTimeoutMs: 70,
      maxOutputBytes: 9,
      maxArgumentBytes: DEFAULT_MAX_ARGUMENT_BYTES,
    });
    expect(sandboxLimitsFromPolicy(policy, { maxArgumentBytes: 10 }).maxArgumentBytes).toBe(10);
    expect(Object.isFrozen(sandboxLimitsFromPolicy(policy))).toBe(true);
  });
});
