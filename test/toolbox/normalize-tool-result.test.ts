import { describe, expect, it } from "vitest";
import { MAX_RESULT_DEPTH, MAX_RESULT_VALUES, normalizeToolResult } from "../../src/toolbox/normalize-tool-result.ts";

function ok(value: unknown) {
  const normalized = normalizeToolResult(value);
  if (!normalized.ok) throw new Error(`expected ok, got: ${normalized.reason}`);
  return normalized.result;
}

function reason(value: unknown): string {
  const normalized = normalizeToolResult(value);
  if (normalized.ok) throw new Error("expected invalid");
  return normalized.reason;
}

describe("normalizeToolResult", () => {
  it("passes strings through as text, without structuredContent", () => {
    expect(ok("hello")).toEqual({ content: [{ type: "text", text: "hello" }] });
    expect(ok("")).toEqual({ content: [{ type: "text", text: "" }] });
  });

  it("turns an object into JSON text and a JSON copy as structuredContent", () => {
    const date = new Date("2024-01-02T03:04:05.000Z");
    const result = ok({ b: 1, nested: { at: date, gone: undefined }, list: [1, undefined] });
    expect(result.content).toEqual([{ type: "text", text: '{"b":1,"nested":{"at":"2024-01-02T03:04:05.000Z"},"list":[1,null]}' }]);
    expect(result.structuredContent).toEqual({ b: 1, nested: { at: "2024-01-02T03:04:05.000Z" }, list: [1, null] });
  });

  it("wraps arrays and primitives as structuredContent { value }", () => {
    expect(ok([1, "a"])).toEqual({ content: [{ type: "text", text: '[1,"a"]' }], structuredContent: { value: [1, "a"] } });
    expect(ok(42)).toEqual({ content: [{ type: "text", text: "42" }], structuredContent: { value: 42 } });
    expect(ok(false)).toEqual({ content: [{ type: "text", text: "false" }], structuredContent: { value: false } });
    expect(ok(null)).toEqual({ content: [{ type: "text", text: "null" }], structuredContent: { value: null } });
  });

  it("keeps a ToolExecutionResult, checking its blocks", () => {
    const result = {
      content: [
        { type: "text", text: "t" },
        { type: "image", data: "aGk=", mimeType: "image/png" },
        { type: "audio", data: "aGk=", mimeType: "audio/wav" },
        { type: "resource", uri: "file:///x" },
      ],
      isError: true,
      structuredContent: { n: 1 },
    };
    expect(ok(result)).toEqual(result);
    expect(ok({ content: [] })).toEqual({ content: [] });
  });

  it("copies each block's known fields, read once, so what was checked is what is kept", () => {
    let reads = 0;
    const block = {
      type: "text",
      get text() {
        return reads++ === 0 ? "first" : 42;
      },
      annotations: { priority: 1 },
    };
    const [copy] = ok({ content: [block] }).content;
    expect(copy).toEqual({ type: "text", text: "first" });
    expect(copy).toEqual({ type: "text", text: "first" });
    expect(reads).toBe(1);
  });

  it("accepts MCP's embedded resource, keeping it as a flat resource block", () => {
    expect(ok({ content: [{ type: "resource", resource: { uri: "file:///x", mimeType: "text/plain", text: "hello" } }] }).content).toEqual([
      { type: "resource", uri: "file:///x", mimeType: "text/plain", text: "hello" },
    ]);
    expect(ok({ content: [{ type: "resource", resource: { uri: "file:///x", text: "" } }] }).content).toEqual([{ type: "resource", uri: "file:///x", text: "" }]);
    expect(reason({ content: [{ type: "resource", resource: "file:///x" }] })).toMatch(/^content\[0\]\.resource is not an object/);
    expect(reason({ content: [{ type: "resource", resource: { text: "t" } }] })).toMatch(/^content\[0\]\.resource: a resource needs a "uri" string/);
  });

  it("accepts MCP's resource_link as a resource block without contents", () => {
    const link = { type: "resource_link", uri: "file:///data.csv", name: "data.csv", description: "rows", mimeType: "text/csv" };
    expect(ok({ content: [link] }).content).toEqual([{ type: "resource", uri: "file:///data.csv", mimeType: "text/csv" }]);
    expect(ok({ content: [{ type: "resource_link", uri: "file:///x", name: "x", text: "not a link's field" }] }).content).toEqual([{ type: "resource", uri: "file:///x" }]);
    expect(reason({ content: [{ type: "resource_link", name: "x" }] })).toMatch(/^content\[0\]: a resource needs a "uri" string/);
  });

  it("refuses a resource's blob rather than dropping its bytes", () => {
    expect(reason({ content: [{ type: "resource", uri: "file:///x", blob: "AAAA" }] })).toMatch(
      /^content\[0\]\.blob: binary resource contents are not supported; .*resource_link/,
    );
    expect(reason({ content: [{ type: "text", text: "t" }, { type: "resource", resource: { uri: "file:///x", mimeType: "application/pdf", blob: "AAAA" } }] })).toMatch(
      /^content\[1\]\.resource\.blob: binary resource contents are not supported/,
    );
  });

  it("refuses media data that is not base64, naming the block's data and the fix", () => {
    const image = (data: string) => ({ content: [{ type: "image", data, mimeType: "image/png" }] });
    expect(reason(image("data:image/png;base64,iVBORw0KGgo="))).toBe(
      'content[0].data is a data: URL; give only the base64 after "base64," (without the data: URL prefix), and its MIME type as "mimeType".',
    );
    expect(reason({ content: [{ type: "audio", data: "this is not base64!!", mimeType: "audio/wav" }] })).toMatch(
      /^content\[0\]\.data is not base64; .*without a data: URL prefix or line breaks/,
    );
    // Characters Buffer.from would skip, padding in the middle, and lengths no bytes decode to.
    for (const data of ["aGk= ", "aGk=\naGk=", "aGk=aGk=", "a", "aGk==", "aG=", "==", "aGk===", "aGk*"]) {
      expect(reason(image(data)), JSON.stringify(data)).toMatch(/^content\[0\]\.data is not base64/);
    }
    // Standard or URL-safe, padded or not, and empty (no bytes).
    for (const data of ["", "aGk=", "aGk", "aA==", "aA", "+/+/", "-_-_", "iVBORw0KGgo="]) {
      expect(ok(image(data)).content, JSON.stringify(data)).toEqual([{ type: "image", data, mimeType: "image/png" }]);
    }
  });

  it("checks base64 of many MiB in one linear pass", () => {
    const data = Buffer.alloc(24 * 1024 * 1024, 7).toString("base64");
    expect(ok({ content: [{ type: "image", data, mimeType: "image/png" }] }).content).toHaveLength(1);
    expect(reason({ content: [{ type: "image", data: `${data}!`, mimeType: "image/png" }] })).toMatch(/is not base64/);
  });

  it("drops MCP _meta from a result", () => {
    expect(ok({ content: [], _meta: { trace: 1 } })).toEqual({ content: [] });
  });

  it("treats an object with other keys beside content as a plain value", () => {
    const value = { content: [1, 2], title: "doc" };
    expect(ok(value).structuredContent).toEqual(value);
    expect(ok({ content: "body" }).structuredContent).toEqual({ content: "body" });
  });

  it("reports malformed result shapes", () => {
    expect(reason({ content: [{ type: "text" }] })).toMatch(/content\[0\].*text/);
    expect(reason({ content: [{ type: "video", data: "" }] })).toMatch(/content\[0\].*unknown block type "video"; use text, image, audio, resource or resource_link/);
    expect(reason({ content: [{ type: "image", data: "x" }] })).toMatch(/mimeType/);
    expect(reason({ content: ["x"] })).toMatch(/content\[0\] is not a content block/);
    expect(reason({ content: [], isError: "yes" })).toMatch(/isError must be a boolean/);
    expect(reason({ content: [], structuredContent: [1] })).toMatch(/structuredContent must be a JSON object/);
    expect(reason({ content: [], structuredContent: { n: 1n } })).toMatch(/\$\.structuredContent\.n is a BigInt/);
  });

  it("reports undefined", () => {
    expect(reason(undefined)).toMatch(/returned undefined/);
  });

  it("reports cycles with their path", () => {
    const cyclic: Record<string, unknown> = { a: { b: [] } };
    ((cyclic.a as { b: unknown[] }).b).push(cyclic);
    expect(reason(cyclic)).toMatch(/\$\.a\.b\[0\] refers back to one of its parents/);
  });

  it("accepts the same object twice when it is not a cycle", () => {
    const shared = { x: 1 };
    expect(ok({ a: shared, b: shared }).structuredContent).toEqual({ a: { x: 1 }, b: { x: 1 } });
  });

  it("reports BigInt, functions, symbols and non-finite numbers", () => {
    expect(reason(10n)).toMatch(/\$ is a BigInt \(10n\)/);
    expect(reason({ n: [1n] })).toMatch(/\$\.n\[0\] is a BigInt/);
    expect(reason(() => 1)).toMatch(/\$ is a function/);
    expect(reason({ f() {} })).toMatch(/\$\.f is a function/);
    expect(reason({ s: Symbol("x") })).toMatch(/\$\.s is a symbol/);
    expect(reason({ n: Number.NaN })).toMatch(/\$\.n is NaN/);
    expect(reason({ "odd key": Infinity })).toMatch(/\$\["odd key"\] is Infinity/);
  });

  it("reports containers JSON would silently empty, and forgotten awaits", () => {
    expect(reason({ m: new Map() })).toMatch(/\$\.m is a Map/);
    expect(reason(new Set([1]))).toMatch(/is a Set/);
    expect(reason({ bytes: new Uint8Array(2) })).toMatch(/\$\.bytes is a Uint8Array/);
    expect(reason({ p: Promise.resolve(1) })).toMatch(/\$\.p is a Promise; did the tool forget an await/);
  });

  it("reports an Error with its path, name and message, and says to throw it or return { message }", () => {
    expect(reason(new Error("something failed"))).toBe(
      '$ is an Error (Error: "something failed"), which JSON writes as {}; throw it to report a failure, or return { message } instead.',
    );
    expect(reason({ ok: false, error: new TypeError("bad input") })).toMatch(/^\$\.error is an Error \(TypeError: "bad input"\)/);
    expect(reason({ content: [], structuredContent: { cause: new RangeError("r") } })).toMatch(/^\$\.structuredContent\.cause is an Error \(RangeError/);
    // Refused even with a library's toJSON: returned as data, it is still a failure not reported.
    expect(reason([Object.assign(new Error("e"), { toJSON: () => ({ message: "e" }) })])).toMatch(/^\$\[0\] is an Error/);
    // The message is quoted cut short; one whose fields throw is still named.
    expect(reason({ e: new Error("x".repeat(1_000_000)) }).length).toBeLessThan(500);
    const unreadable = Object.defineProperty(new Error(), "message", {
      get() {
        throw new Error("boom");
      },
    });
    expect(reason({ e: unreadable })).toMatch(/^\$\.e is an Error, which JSON writes as \{\}/);
  });

  it("reports RegExps, WeakRefs, boxed primitives and invalid dates, which JSON would empty or null without a word", () => {
    expect(reason({ r: /x/g })).toMatch(/^\$\.r is a RegExp \(\/x\/g\), which JSON writes as \{\}; return its source string instead/);
    expect(reason({ w: new WeakRef({}) })).toMatch(/^\$\.w is a WeakRef.*deref/);
    expect(reason({ when: new Date(Number.NaN) })).toMatch(/^\$\.when is an invalid Date, which JSON writes as null/);
    expect(reason(new String("boxed"))).toMatch(/^\$ is a boxed String \(an object wrapping a primitive\); return the primitive value instead/);
    expect(reason({ n: new Number(5) })).toMatch(/^\$\.n is a boxed Number/);
    expect(reason({ b: [new Boolean(false)] })).toMatch(/^\$\.b\[0\] is a boxed Boolean/);
    expect(reason({ big: Object(1n) })).toMatch(/^\$\.big is a boxed BigInt/);
    expect(reason({ s: Object(Symbol("s")) })).toMatch(/^\$\.s is a boxed Symbol/);
  });

  it("still writes objects whose fields or toJSON are their JSON", () => {
    class Point {
      x = 1;
      y = 2;
    }
    expect(ok({ p: new Point(), u: new URL("https://x.test/a"), d: new Date(0) }).structuredContent).toEqual({
      p: { x: 1, y: 2 },
      u: "https://x.test/a",
      d: "1970-01-01T00:00:00.000Z",
    });
  });

  it("keeps an own __proto__ key as data", () => {
    const value = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as unknown;
    const structured = ok(value).structuredContent as Record<string, unknown>;
    expect(Object.getPrototypeOf(structured)).toBe(Object.prototype);
    expect(Object.keys(structured)).toEqual(["__proto__", "a"]);
    expect((structured as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it("refuses a result past MAX_RESULT_VALUES before copying it (a sparse array of length 2^32 - 1)", () => {
    const rows: unknown[] = [];
    rows.length = 2 ** 32 - 1;
    expect(reason({ rows })).toMatch(/\$\.rows takes the result past 10000000 values/);
    expect(reason({ content: rows })).toMatch(/\$\.content takes the result past/);
    expect(reason({ content: [{ type: "text", text: "x" }], structuredContent: { rows } })).toMatch(/\$\.structuredContent\.rows takes/);
    // Counted over the whole tree, not per array.
    const wide = Array.from({ length: 11 }, () => new Array<number>(MAX_RESULT_VALUES / 10).fill(0));
    expect(reason({ wide })).toMatch(/takes the result past/);
  });

  it("refuses a result nested deeper than MAX_RESULT_DEPTH levels with a clear reason (no stack overflow at any depth)", () => {
    const nest = (levels: number): unknown => {
      let value: unknown = 1;
      for (let i = 0; i < levels; i++) value = [value];
      return value;
    };
    // Arrays at levels 1..200 below the top-level object pass; one more is refused.
    expect(ok({ v: nest(MAX_RESULT_DEPTH) }).structuredContent).toBeDefined();
    expect(reason({ v: nest(MAX_RESULT_DEPTH + 1) })).toMatch(/^\$\.v\[0\]\[0\].*… is nested deeper than 200 levels; return flatter data/);
    expect(reason({ v: nest(1_000_000) })).toMatch(/nested deeper than 200 levels/);
    expect(reason({ content: [], structuredContent: { v: nest(5_000) } })).toMatch(/^\$\.structuredContent\.v.*nested deeper/);
  });

  it("keeps a large result under the bound", () => {
    const rows = new Array<number>(100_000).fill(1);
    expect((ok({ rows }).structuredContent as { rows: number[] }).rows).toHaveLength(100_000);
  });

  it("never throws, even on hostile getters", () => {
    const hostile = Object.defineProperty({}, "x", {
      enumerable: true,
      get() {
        throw new Error("boom");
      },
    });
    expect(reason(hostile)).toMatch(/could not be read: boom/);
  });
});
