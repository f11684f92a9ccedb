import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ChainRuntimeError, describeThrown, ERROR_CODES, isChainRuntimeError } from "../../src/kernel/index.ts";

describe("error catalogue", () => {
  it("the README's error table lists exactly the codes of the catalogue", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const section = readme.split(/^## Errors$/m)[1]?.split(/^## /m)[0] ?? "";
    const documented = [...section.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((match) => match[1]);
    expect(documented.sort()).toEqual(Object.keys(ERROR_CODES).sort());
  });

  it("every code is thrown somewhere (no dead entries)", () => {
    const root = new URL("../../", import.meta.url);
    const sources = ["src", "sandbox"]
      .flatMap((dir) => readdirSync(new URL(dir, root), { recursive: true, encoding: "utf8" }).map((file) => `${dir}/${file}`))
      .filter((file) => file.endsWith(".ts") && file !== "src/kernel/errors.ts")
      .map((file) => readFileSync(new URL(file, root), "utf8"))
      .join("\n");
    for (const code of Object.keys(ERROR_CODES)) expect(sources, code).toContain(`"${code}"`);
  });

  it("every code has a description", () => {
    for (const [code, text] of Object.entries(ERROR_CODES)) expect(text.length, code).toBeGreaterThan(10);
  });

  it("brands errors so the check survives copies of the package", () => {
    const error = new ChainRuntimeError("TRACE_NOT_FOUND", "no such trace", { details: { name: "x" } });
    expect(isChainRuntimeError(error)).toBe(true);
    expect(error.code).toBe("TRACE_NOT_FOUND");
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
    expect(describeThrown(10n)).toBe("10n");
  });

  it("describes values that rethrow themselves when read or printed", () => {
    const bad: Record<string, unknown> = {};
    const rethrow = (): never => {
      throw bad;
    };
    Object.defineProperties(bad, { toJSON: { value: rethrow }, toString: { value: rethrow } });
    expect(describeThrown(bad)).toBe("an unprintable value");
    const trap: object = new Proxy(
      {},
      {
        get: () => {
          throw trap;
        },
        getPrototypeOf: () => {
          throw trap;
        },
      },
    );
    expect(describeThrown(trap)).toBe("an unprintable value");
    const error = new Error("hidden");
    Object.defineProperty(error, "message", { get: rethrow });
    expect(describeThrown(error)).toBe("an Error whose message cannot be read");
  });
});
