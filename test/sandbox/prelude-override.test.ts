import { describe, expect, it, vi } from "vitest";
import type * as PreludeBundle from "../../sandbox/prelude-bundle.ts";

// A driver handed its own prelude never loads the built-in one (an esbuild build from a source
// checkout: a process to spawn, which fails when the host is out of descriptors). The test makes
// loading the built-in prelude fail, and gives the drivers the same text as their own.
const real = vi.hoisted(() => ({ prelude: "" }));
vi.mock("../../sandbox/prelude-bundle.ts", async (importOriginal) => {
  const bundle = await importOriginal<typeof PreludeBundle>();
  real.prelude = bundle.getPreludeSource();
  const refuse = (): never => {
    throw new Error("the built-in prelude was loaded");
  };
  return { ...bundle, loadPreludeSource: refuse, getPreludeSource: refuse };
});

const { InProcessSandboxDriver } = await import("../../sandbox/in-process-driver.ts");
const { ProcessSandboxDriver } = await import("../../sandbox/process-driver.ts");
const { compileScript } = await import("../../src/compile/index.ts");
const { resolveChainPolicy } = await import("../../src/kernel/index.ts");
const { sandboxLimitsFromPolicy } = await import("../../sandbox/limits.ts");

describe.each([
  ["in-process", () => new InProcessSandboxDriver({ preludeSource: real.prelude, poolSize: 1 })],
  ["process", () => new ProcessSandboxDriver({ preludeSource: real.prelude, processes: 1 })],
] as const)("a %s driver given its own prelude", (_name, create) => {
  it("runs with it, and never loads the built-in one", async () => {
    const driver = create();
    try {
      await driver.warm();
      const compiled = compileScript("return 6 * 7");
      if (!compiled.ok) return expect.fail("the script compiles");
      const outcome = await driver.run({
        chainId: "own-prelude",
        script: compiled.code,
        scriptName: "chain.ts",
        toolNames: [],
        maxToolCalls: 1,
        seed: 1,
        clockStart: 0,
        limits: sandboxLimitsFromPolicy(resolveChainPolicy({})),
        onToolCall: () => Promise.resolve({ status: "ok", text: "" }),
      });
      expect({ status: outcome.status, returnJson: outcome.returnJson }).toEqual({ status: "ok", returnJson: "42" });
    } finally {
      await driver.close();
    }
  });
});
