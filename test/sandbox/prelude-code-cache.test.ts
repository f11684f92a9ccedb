import ivm from "isolated-vm";
import { describe, expect, it } from "vitest";
import { compilePrelude } from "../../sandbox/isolate-common.ts";
import { IsolateRunner } from "../../sandbox/isolate-runner.ts";
import { getPreludeSource } from "../../sandbox/prelude-bundle.ts";
import { SyncIsolateRunner } from "../../sandbox/sync-isolate-runner.ts";
import { chainScript } from "../contracts/sandbox-driver.contract.ts";

type CompiledPrelude = ivm.Script & { cachedData?: unknown; cachedDataRejected?: boolean };

function compileIn(source: string): CompiledPrelude {
  const isolate = new ivm.Isolate({ memoryLimit: 16 });
  try {
    return compilePrelude(isolate, source) as CompiledPrelude;
  } finally {
    isolate.dispose();
  }
}

describe("the prelude's code cache", () => {
  it("is made by one isolate and taken by the next ones, for the same source only", () => {
    // A source of its own, so whatever other tests compiled first does not matter.
    const source = `${getPreludeSource()}\n// ${Math.random()}`;
    const first = compileIn(source);
    expect(first.cachedData).toBeDefined(); // made
    expect(first.cachedDataRejected).toBeUndefined(); // nothing was offered
    const second = compileIn(source);
    expect(second.cachedDataRejected).toBe(false); // offered and taken
    expect(second.cachedData).toBeUndefined(); // so nothing new was made
    const other = compileIn(`${source}\n;`);
    expect(other.cachedDataRejected).toBeUndefined(); // another source is not offered this cache
    expect(other.cachedData).toBeDefined();
  });

  it.each([
    ["IsolateRunner", () => new IsolateRunner({ memoryLimitMb: 32 })],
    ["SyncIsolateRunner", () => new SyncIsolateRunner({ memoryLimitMb: 32 })],
  ])("gives %s a working prelude from the cache", async (_name, create) => {
    for (let i = 0; i < 2; i++) {
      const runner = create();
      try {
        const outcome = await runner.run({
          chainId: "c",
          script: chainScript("const r = await tools.echo({ n: 1 }); return [r.text, Math.random() < 1, typeof Date.now()];"),
          scriptName: "chain.js",
          toolNames: ["echo"],
          maxToolCalls: 5,
          seed: 1,
          clockStart: 0,
          limits: { memoryLimitMb: 32, cpuTimeMs: 2_000, totalTimeoutMs: 3_000, maxOutputBytes: 1_000, maxArgumentBytes: 1_000 },
          onToolCall: (call) => Promise.resolve({ status: "ok", text: call.argsJson }),
        });
        expect(JSON.parse(outcome.returnJson ?? "null")).toEqual(['{"n":1}', true, "number"]);
      } finally {
        runner.dispose();
      }
    }
  });
});
