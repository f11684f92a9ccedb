import { describe, expect, it } from "vitest";
import { runHost } from "../support/run-host.ts";

describe("a host out of file descriptors", () => {
  it("refuses the first chain and the first esbuild compiles with the reason, and recovers (the host hung for good), also from a killed esbuild", async () => {
    // esbuild's synchronous API waited, with no timeout, for a worker thread that could not start.
    const { code, stderr, report } = await runHost("chain/emfile-compile-host.ts", { fdLimit: 64 });
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expect(report).toMatchObject({
      firstRun: expect.stringMatching(/^error: The sandbox failed: Could not start an isolate: Could not build the sandbox prelude: .*this process is out of file descriptors \(EMFILE\)$/),
      firstRunAfter: "ok 2",
      firstEsbuild: expect.stringMatching(/^threw COMPILE_FAILED: esbuild could not compile the script: esbuild's process did not start: spawn .* EMFILE$/),
      secondEsbuild: expect.stringMatching(/^threw COMPILE_FAILED: esbuild could not compile the script: esbuild's process did not start: spawn .* EMFILE$/),
      syncMeanwhile: true, // compileScript's worker, alive, was not stopped with the failed process (it hung)
      firstEsbuildAfter: "ok 3",
      afterKill: expect.stringMatching(/^threw COMPILE_FAILED: .*The service is no longer running/),
      afterKillAgain: "ok 3", // the dead process was dropped
      uncaught: [],
    });
  }, 30_000);

  it("runs a burst of chains on a FileTraceStore, more than it has descriptors, each with its whole trace", async () => {
    // 600 chains queued for two isolates, each with its log begun: every one held its file open,
    // and under 300 descriptors 599 of them lost their durable trace (EMFILE), every call refused.
    let host = await runHost("chain/emfile-burst-host.ts", { fdLimit: 300, args: ["600"] });
    // isolated-vm's own internal assertion (`IsolateEnvironment::GetCurrent(): environment !=
    // nullptr`) aborted this in-process host once in ~10 runs of the suite under load, never in 15
    // runs alone: a known limitation of the in-process driver (SECURITY.md), not what this test
    // checks. Such an abort, and only that, is tried once more.
    if (host.code === null && /ivm::IsolateEnvironment/.test(host.stderr)) host = await runHost("chain/emfile-burst-host.ts", { fdLimit: 300, args: ["600"] });
    const { code, stderr, report } = host;
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expect(report).toEqual({ whole: 600, outcomes: {}, mostOpen: expect.any(Number) as number });
    expect(report.mostOpen).toBeLessThanOrEqual(128); // FileTraceStore's default maxOpenFiles
  }, 30_000);
});
