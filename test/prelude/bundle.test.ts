import { describe, expect, it } from "vitest";
import { buildPreludeBundle, getPreludeSource } from "../../sandbox/prelude-bundle.ts";

/**
 * The minified prelude must stay small: it runs in every fresh context (from V8's code cache, so
 * a few bytes more cost nothing measurable; the budget is there to catch a bundled dependency).
 */
const BYTE_BUDGET = 15 * 1024;

describe("prelude bundle", () => {
  const source = buildPreludeBundle();

  it("stays under its byte budget", () => {
    expect(Buffer.byteLength(source)).toBeLessThan(BYTE_BUDGET);
  });

  it.each(["require(", "process", "node:", "import(", "globalThis.fetch"])("contains no host reference %j", (needle) => {
    expect(source).not.toContain(needle);
  });

  it("is served from memory after the first build", () => {
    expect(getPreludeSource()).toBe(getPreludeSource());
    expect(getPreludeSource()).toBe(source);
  });
});
