import ivm from "isolated-vm";
import { describe, expect, it } from "vitest";
import { compilePrelude } from "../../sandbox/isolate-common.ts";
import { getPreludeSource } from "../../sandbox/prelude-bundle.ts";

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
});
