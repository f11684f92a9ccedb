import ivm from "isolated-vm";
import { afterAll, describe, expect, it } from "vitest";
import { ScriptCache } from "../../sandbox/isolate-common.ts";

const isolate = new ivm.Isolate({ memoryLimit: 16 });
afterAll(() => isolate.dispose());

describe("ScriptCache", () => {
  it("says a script is worth caching on its second sighting, not its first", () => {
    const cache = new ScriptCache(isolate);
    expect(cache.seenBefore({ script: "a" })).toBe(false);
    expect(cache.seenBefore({ script: "b" })).toBe(false);
    expect(cache.seenBefore({ script: "a" })).toBe(true);
    // A second sighting is used up: the script is compiled into the cache then.
    expect(cache.seenBefore({ script: "a" })).toBe(false);
  });

  it("remembers the last 8 first sightings", () => {
    const cache = new ScriptCache(isolate);
    for (let i = 0; i < 9; i++) cache.seenBefore({ script: `s${i}` });
    expect(cache.seenBefore({ script: "s0" })).toBe(false); // the oldest was forgotten
    expect(cache.seenBefore({ script: "s8" })).toBe(true);
  });

  it("compiles into the cache and returns the cached script after", async () => {
    const cache = new ScriptCache(isolate);
    const request = { script: "(async function __chain__() {\nreturn 1;\n})", scriptName: "chain.js" };
    expect(cache.get(request)).toBeUndefined();
    const compiled = await cache.compile(request);
    expect(compiled).toBeInstanceOf(ivm.Script);
    expect(cache.get(request)).toBe(compiled);
    expect(cache.get({ ...request, scriptName: "other.js" })).toBeUndefined();
  });
});
