import { describe, expect, it } from "vitest";
import { DEFAULT_CHAIN_POLICY, isChainRuntimeError, knownPolicyFields, MAX_MEMORY_LIMIT_MB, MAX_POLICY_DURATION_MS, MAX_TOOL_CALLS, overrideChainPolicy, resolveChainPolicy } from "../../src/kernel/index.ts";
import { ToolInvoker, Toolbox } from "../../src/index.ts";

describe("ChainPolicy", () => {
  it("has the documented defaults, frozen", () => {
    expect(DEFAULT_CHAIN_POLICY).toEqual({
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
    expect(Object.isFrozen(DEFAULT_CHAIN_POLICY)).toBe(true);
  });

  it("merges overrides and returns a frozen policy", () => {
    const policy = resolveChainPolicy({ maxToolCalls: 3 });
    expect(policy.maxToolCalls).toBe(3);
    expect(policy.callTimeoutMs).toBe(60_000);
    expect(Object.isFrozen(policy)).toBe(true);
  });

  it("refuses unknown fields with POLICY_INVALID, suggesting the closest one", () => {
    expect(() => resolveChainPolicy({ maxToolCall: 5 } as never)).toThrow(/no field "maxToolCall"; did you mean maxToolCalls\?/);
    expect(() => resolveChainPolicy({ timeout: 5 } as never)).toThrow(/no field "timeout" \(fields: maxToolCalls, /);
    expect(() => resolveChainPolicy(null as never)).toThrow(/A policy is an object/);
    expect(() => resolveChainPolicy({ memoryLimitMb: "64" } as never)).toThrow(/got "64"/);
    expect(() => resolveChainPolicy([] as never)).toThrow(/A policy is an object of ChainPolicy fields; got an array\./);
    expect(() => resolveChainPolicy({ maxRiskUnapproved: "medium" } as never)).toThrow(/must be "safe", "high" or "critical"; got "medium"\./);
  });

  it("keeps only the fields it knows of a recorded policy (another version's trace)", () => {
    expect(knownPolicyFields({ maxToolCalls: 3, retiredField: true })).toEqual({ maxToolCalls: 3 });
    expect(resolveChainPolicy(knownPolicyFields({ ...DEFAULT_CHAIN_POLICY, retiredField: 1 }))).toEqual(DEFAULT_CHAIN_POLICY);
  });

  it("takes durations up to the longest timer Node.js can set", () => {
    const longest = { callTimeoutMs: MAX_POLICY_DURATION_MS, totalTimeoutMs: MAX_POLICY_DURATION_MS, cpuTimeMs: MAX_POLICY_DURATION_MS };
    expect(resolveChainPolicy(longest)).toMatchObject(longest);
    expect(() => resolveChainPolicy({ totalTimeoutMs: MAX_POLICY_DURATION_MS + 1 })).toThrow(/from 1 to 2147483647/);
  });

  it("brings the approval wait below a shorter callTimeoutMs set alone (the default 55 s was refused)", () => {
    expect(resolveChainPolicy({ callTimeoutMs: 10_000 })).toMatchObject({ callTimeoutMs: 10_000, approvalTimeoutMs: 9_166 });
    expect(resolveChainPolicy({ callTimeoutMs: 2 })).toMatchObject({ callTimeoutMs: 2, approvalTimeoutMs: 1 });
    expect(resolveChainPolicy({ callTimeoutMs: 120_000 }).approvalTimeoutMs).toBe(55_000);
    // Set together, both are taken as given, and still checked.
    expect(resolveChainPolicy({ callTimeoutMs: 10_000, approvalTimeoutMs: 2_000 }).approvalTimeoutMs).toBe(2_000);
    expect(() => resolveChainPolicy({ callTimeoutMs: 10_000, approvalTimeoutMs: 10_000 })).toThrow(/approvalTimeoutMs \(10000\) must be below callTimeoutMs \(10000\)/);
  });

  it("says a callTimeoutMs of 1 set alone leaves no time for an approval, naming that field", () => {
    expect(() => resolveChainPolicy({ callTimeoutMs: 1 })).toThrow(/ChainPolicy\.callTimeoutMs \(1\) leaves no time for an approval wait.*set callTimeoutMs to 2 or more/);
  });

  it("applies the same rule to an override of a policy (a session's, a replay's)", () => {
    const base = resolveChainPolicy({ approvalTimeoutMs: 20_000 });
    expect(overrideChainPolicy(base, { callTimeoutMs: 10_000 })).toMatchObject({ callTimeoutMs: 10_000, approvalTimeoutMs: 9_166 });
    // A base approval wait that still fits is kept; one set in the override wins.
    expect(overrideChainPolicy(base, { callTimeoutMs: 30_000 }).approvalTimeoutMs).toBe(20_000);
    expect(overrideChainPolicy(base, { callTimeoutMs: 10_000, approvalTimeoutMs: 1_000 }).approvalTimeoutMs).toBe(1_000);
    expect(overrideChainPolicy(base, { maxToolCalls: undefined as unknown as number }).maxToolCalls).toBe(50);
    const invoker = new ToolInvoker({ toolbox: new Toolbox([]) });
    expect(invoker.openSession({ policy: { callTimeoutMs: 10_000 } }).policy).toMatchObject({ callTimeoutMs: 10_000, approvalTimeoutMs: 9_166 });
  });

  it("ignores undefined overrides", () => {
    expect(resolveChainPolicy({ maxToolCalls: undefined as unknown as number }).maxToolCalls).toBe(50);
  });

  it.each([
    [{ approvalTimeoutMs: 60_000 }, "approvalTimeoutMs"],
    [{ approvalTimeoutMs: 100, callTimeoutMs: 50 }, "approvalTimeoutMs"],
    [{ maxToolCalls: -1 }, "maxToolCalls"],
    [{ maxToolCalls: 1.5 }, "maxToolCalls"],
    [{ memoryLimitMb: 2 }, "memoryLimitMb"],
    // 128 MiB given in bytes: the isolate's heap would be unbounded in practice.
    [{ memoryLimitMb: 134_217_728 }, "memoryLimitMb"],
    [{ maxToolCalls: 1e15 }, "maxToolCalls"],
    [{ maxConcurrentCalls: 0 }, "maxConcurrentCalls"],
    [{ maxRiskUnapproved: "medium" as never }, "maxRiskUnapproved"],
    // Past the longest timer Node.js can set, a timeout would fire after 1 ms.
    [{ callTimeoutMs: 2 ** 31, approvalTimeoutMs: 1000 }, "callTimeoutMs"],
    [{ totalTimeoutMs: Number.MAX_SAFE_INTEGER }, "totalTimeoutMs"],
    [{ cpuTimeMs: 2 ** 31 }, "cpuTimeMs"],
  ])("refuses %j with POLICY_INVALID naming the field", (overrides, field) => {
    let thrown: unknown;
    try {
      resolveChainPolicy(overrides);
    } catch (error) {
      thrown = error;
    }
    expect(isChainRuntimeError(thrown)).toBe(true);
    expect((thrown as { code: string }).code).toBe("POLICY_INVALID");
    expect((thrown as { details: { field: string } }).details.field).toBe(field);
    expect((thrown as Error).message).toContain(field);
  });

  it("says a memoryLimitMb in bytes is one, and takes the largest values it allows", () => {
    expect(() => resolveChainPolicy({ memoryLimitMb: 134_217_728 })).toThrow(
      "ChainPolicy.memoryLimitMb must be an integer from 8 to 16384 (MiB, not bytes: 128 is 128 MiB); got 134217728.",
    );
    expect(resolveChainPolicy({ memoryLimitMb: MAX_MEMORY_LIMIT_MB, maxToolCalls: MAX_TOOL_CALLS })).toMatchObject({ memoryLimitMb: 16_384, maxToolCalls: 1_000_000 });
  });
});
