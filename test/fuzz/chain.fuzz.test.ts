/**
 * Short mode of the chain fuzzer (see chain-fuzz.ts for the properties): 60 random scripts per
 * driver, in well under 30 s. The long, seedable mode is `node test/fuzz/run-long.ts --runs N
 * --seed S`; a failure here prints the seed and path to replay it there.
 */
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { DRIVERS } from "../security/harness.ts";
import { ChainFuzzer, fuzzCase } from "./chain-fuzz.ts";

const RUNS = Number(process.env.ISOCHAIN_FUZZ_RUNS ?? 60);

describe.each(DRIVERS)("chain fuzzing [%s]", (driver) => {
  const fuzzer = new ChainFuzzer({ driver });
  afterAll(async () => {
    await fuzzer.close();
  });

  it(`${RUNS} random scripts: valid result, whole trace, budget kept, no unhandled rejection`, { timeout: 60_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fuzzCase, async (input) => {
        await fuzzer.check(input);
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
    expect(fuzzer.unhandledRejections).toEqual([]);
    // The generator reaches more than one outcome (a generator that only ever compiles-fails tests nothing).
    expect(fuzzer.statuses.size).toBeGreaterThan(1);
  });

  it("a known-tricky case: budget 0, parallel calls, hangs and garbage", async () => {
    const result = await fuzzer.check({
      maxToolCalls: 0,
      script: 'await Promise.all([tools.fuzz({ b: "hang", v: 1 }), tools.fuzz({ b: "garbage-cyclic", v: "\\ud800" })]); return budget.remaining;',
    });
    expect(result.status).toBe("ok");
    expect(result.returnValue).toBe(0);
    expect(result.callTrace.map((record) => record.code)).toEqual(["BUDGET_EXCEEDED", "BUDGET_EXCEEDED"]);
  });
});
