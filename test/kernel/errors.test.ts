import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ChainRuntimeError, describeThrown, ERROR_CODES, isChainRuntimeError } from "../../src/kernel/index.ts";

describe("error catalogue", () => {
  it("every code is documented in the README's error table", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    for (const code of Object.keys(ERROR_CODES)) expect(readme, code).toContain(`\`${code}\``);
  });

  it("every code has a description", () => {
    for (const [code, text] of Object.entries(ERROR_CODES)) expect(text.length, code).toBeGreaterThan(10);
  });

  it("brands errors so the check survives copies of the package", () => {
    const error = new ChainRuntimeError("TOOL_NOT_FOUND", "no such tool", { details: { name: "x" } });
    expect(isChainRuntimeError(error)).toBe(true);
    expect(error.code).toBe("TOOL_NOT_FOUND");
    expect(error.details).toEqual({ name: "x" });
    // A structurally equal object from "another copy" carries the same global symbol.
    const foreign = Object.assign(new Error("x"), { [Symbol.for("isochain.ChainRuntimeError")]: true });
    expect(isChainRuntimeError(foreign)).toBe(true);
    expect(isChainRuntimeError(new Error("plain"))).toBe(false);
    expect(isChainRuntimeError(null)).toBe(false);
  });

  it("describes any thrown value without throwing", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(describeThrown(new TypeError("bad"))).toBe("bad");
    expect(describeThrown("text")).toBe("text");
    expect(describeThrown({ a: 1 })).toBe('{"a":1}');
    expect(describeThrown(cyclic)).toBe("[object Object]");
    expect(describeThrown(undefined)).toBe("undefined");
  });
});
