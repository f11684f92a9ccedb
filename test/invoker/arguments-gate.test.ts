import { describe, expect, it } from "vitest";
import { findNonPlainData } from "../../prelude/plain-data.ts";
import { MAX_ARGUMENT_NODES } from "../../src/invoker/clone-arguments.ts";
import { digestJson } from "../../src/kernel/index.ts";
import { defineTool } from "../../src/toolbox/define-tool.ts";
import { approver, echoTool, localTool, makeInvoker } from "./invoker-fixtures.ts";

const searchSchema = {
  type: "object",
  properties: {
    query: { type: "string" },
    limit: { type: "integer" },
    mode: { enum: ["fast", "deep"] },
    items: { type: "array", items: { type: "object", properties: { name: { type: "string" } }, required: ["name"] } },
  },
  required: ["query"],
  additionalProperties: false,
} as const;

describe("ToolInvoker argument gate", () => {
  it("names the field and why in ajv failures", async () => {
    const tool = echoTool("search", { inputSchema: searchSchema });
    const invoker = makeInvoker([tool]);
    const session = invoker.openSession();
    const wrongType = await invoker.invoke({ name: "search", arguments: { query: "q", limit: 2.5 } }, { session });
    expect(wrongType).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
    expect(wrongType.text).toContain('argument "limit" must be integer');
    const several = await invoker.invoke(
      { name: "search", arguments: { limit: "x", mode: "slow", extra: 1, items: [{ name: "a" }, {}] } },
      { session },
    );
    expect(several.text).toContain('argument "query" is required');
    expect(several.text).toContain('argument "limit" must be integer');
    expect(several.text).toContain('argument "mode" must be one of "fast", "deep"');
    expect(several.text).toContain('argument "extra" is not allowed');
    expect(several.text).toContain('argument "items[1].name" is required');
    expect(tool.calls).toHaveLength(0);
    expect(session.trace.map((r) => r.code)).toEqual(["INVALID_ARGUMENTS", "INVALID_ARGUMENTS"]);
  });

  it("runs schema patterns in linear time: a catastrophic pattern answers at once", async () => {
    // On V8's backtracking engine this one call holds the thread for minutes (2^30 steps).
    const tool = echoTool("lookup", {
      inputSchema: { type: "object", properties: { word: { type: "string", pattern: "^(a+)+$" } }, required: ["word"] },
    });
    const invoker = makeInvoker([tool]);
    const session = invoker.openSession();
    const hostile = await invoker.invoke({ name: "lookup", arguments: { word: `${"a".repeat(30)}!` } }, { session });
    expect(hostile).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
    expect(hostile.text).toContain('argument "word" must match pattern "^(a+)+$"');
    const fine = await invoker.invoke({ name: "lookup", arguments: { word: "aaaa" } }, { session });
    expect(fine.status).toBe("ok");
  });

  it("checks string formats (email, date-time, uuid, uri...), and leaves regex and byte unchecked (costly on script-chosen text)", async () => {
    const tool = echoTool("send", {
      inputSchema: {
        type: "object",
        properties: {
          to: { type: "string", format: "email" },
          at: { type: "string", format: "date-time" },
          id: { type: "string", format: "uuid" },
          link: { type: "string", format: "uri" },
          rule: { type: "string", format: "regex" },
          blob: { type: "string", format: "byte" },
        },
      },
    });
    const invoker = makeInvoker([tool]);
    const session = invoker.openSession();
    const refused = async (args: Record<string, unknown>): Promise<string> => {
      const result = await invoker.invoke({ name: "send", arguments: args }, { session });
      expect(result).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
      return (result as { text: string }).text;
    };
    expect(await refused({ to: "definitely not an email" })).toContain('argument "to" must match format "email"');
    expect(await refused({ at: "yesterday" })).toContain('argument "at" must match format "date-time"');
    // The strict RFC 3339 form trips a model most (a time zone is required): the message says so.
    expect(await refused({ at: "2026-11-28T10:00:00" })).toContain(
      'argument "at" must match format "date-time" (RFC 3339, with a time zone: "2026-11-28T14:30:00Z" or "2026-11-28T14:30:00+01:00")',
    );
    expect(await refused({ id: "1234" })).toContain('argument "id" must match format "uuid"');
    expect(await refused({ link: "not a uri" })).toContain('argument "link" must match format "uri"');
    const fine = await invoker.invoke(
      {
        name: "send",
        arguments: { to: "ceo@example.com", at: "2026-11-28T10:00:00Z", id: "0b3c9a52-5d1e-4a8f-9c6e-2f4b7d8e1a30", link: "https://example.com/a?b=1" },
      },
      { session },
    );
    expect(fine.status).toBe("ok");
    // Unchecked: what they would cost on 8 MiB of text (a RegExp compile of it; a stack overflow).
    const unchecked = await invoker.invoke({ name: "send", arguments: { rule: "(", blob: "a".repeat(4_000_000) } }, { session });
    expect(unchecked.status).toBe("ok");
    expect(tool.calls).toHaveLength(2);
  });

  it("checks own properties only: Object.prototype's members neither meet nor break a schema", async () => {
    const tool = echoTool("named", {
      inputSchema: {
        type: "object",
        properties: { constructor: { type: "string" }, toString: { type: "boolean" }, valueOf: { type: "number" } },
        required: ["valueOf"],
      },
    });
    const invoker = makeInvoker([tool]);
    const session = invoker.openSession();
    const missing = await invoker.invoke({ name: "named", arguments: {} }, { session });
    expect(missing).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
    expect(missing.text).toContain('argument "valueOf" is required');
    expect(missing.text).not.toContain("constructor");
    const given = await invoker.invoke({ name: "named", arguments: { valueOf: 1 } }, { session });
    expect(given.status).toBe("ok");
    expect(tool.calls).toHaveLength(1);
  });

  it("refuses arguments past MAX_ARGUMENT_NODES values, as text or as an object, without copying them", async () => {
    const tool = echoTool("wide");
    const invoker = makeInvoker([tool]);
    const session = invoker.openSession();
    const wide = Object.fromEntries(Array.from({ length: MAX_ARGUMENT_NODES + 1 }, (_, i) => [`k${i}`, i]));
    const asText = await invoker.invoke({ name: "wide", arguments: JSON.stringify(wide) }, { session });
    expect(asText).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS", text: expect.stringContaining(`more than ${MAX_ARGUMENT_NODES} values`) });
    const asObject = await invoker.invoke({ name: "wide", arguments: wide }, { session });
    expect(asObject).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS", text: expect.stringContaining(`more than ${MAX_ARGUMENT_NODES} values`) });
    expect(tool.calls).toHaveLength(0);
    // The arguments object counts as one: its fields may be one fewer, the prelude's bound too.
    const full = Object.fromEntries(Array.from({ length: MAX_ARGUMENT_NODES - 1 }, (_, i) => [`k${i}`, i]));
    expect((await invoker.invoke({ name: "wide", arguments: JSON.stringify(full) }, { session })).status).toBe("ok");
    expect(findNonPlainData(full, MAX_ARGUMENT_NODES)).toBeUndefined();
    expect(findNonPlainData({ ...full, one: 1 }, MAX_ARGUMENT_NODES)).toMatch(/more than 100000 values/);
  });

  it("compiles each tool's schema once", async () => {
    let reads = 0;
    const tool = echoTool("counted");
    const schema = { type: "object", properties: { a: { type: "number" } } };
    Object.defineProperty(tool, "inputSchema", {
      get() {
        reads++;
        return schema;
      },
    });
    const invoker = makeInvoker([tool], { registry: "map" }); // a Toolbox reads the schema when adding
    const session = invoker.openSession();
    for (let i = 0; i < 3; i++) await invoker.invoke({ name: "counted", arguments: { a: i } }, { session });
    expect(reads).toBe(1);
  });

  it("turns a tool with an invalid schema into an error result, not a crash", async () => {
    const tool = echoTool("broken", { inputSchema: { type: "object", properties: { a: { type: "nonsense" } } } as never });
    // A Toolbox refuses the tool (TOOL_INVALID); a registry may still hold it unchecked.
    expect(() => makeInvoker([tool])).toThrow(/inputSchema is not a valid JSON Schema/);
    const invoker = makeInvoker([tool], { registry: "map" });
    const session = invoker.openSession();
    for (let i = 0; i < 2; i++) {
      const result = await invoker.invoke({ name: "broken", arguments: {} }, { session });
      expect(result).toMatchObject({ status: "error", code: "NOT_CALLABLE" });
      expect(result.text).toContain("inputSchema is not a valid JSON Schema");
    }
    expect(tool.calls).toHaveLength(0);
  });

  it("reuses the validator the tool check compiled: one compile per schema, checked or called", async () => {
    let reads = 0;
    const inner = { type: "number" };
    const properties = {};
    Object.defineProperty(properties, "a", {
      enumerable: true,
      get() {
        reads++;
        return inner;
      },
    });
    const tool = defineTool({ name: "counted", description: "", inputSchema: { type: "object", properties } as never, execute: () => "ok" });
    const invoker = makeInvoker([tool]); // a Toolbox checks the tool again: compiled already
    const readsWhenChecked = reads;
    const session = invoker.openSession();
    expect((await invoker.invoke({ name: "counted", arguments: { a: 1 } }, { session })).status).toBe("ok");
    // Only compiling reads the schema below the top: the call compiled nothing.
    expect(reads).toBe(readsWhenChecked);
    // A refused small argument compiles the every-error validator for its message, once.
    expect(await invoker.invoke({ name: "counted", arguments: { a: "x" } }, { session })).toMatchObject({ code: "INVALID_ARGUMENTS" });
    const readsWhenDetailed = reads;
    expect(await invoker.invoke({ name: "counted", arguments: { a: "y" } }, { session })).toMatchObject({ code: "INVALID_ARGUMENTS" });
    expect(reads).toBe(readsWhenDetailed);
    // A second invoker (another Toolbox) reuses it too.
    const again = makeInvoker([tool]);
    const readsWhenCheckedAgain = reads;
    await again.invoke({ name: "counted", arguments: { a: 1 } }, { session: again.openSession() });
    expect(reads).toBe(readsWhenCheckedAgain);
  });

  it("lets two tools use the same $id", async () => {
    const schema = () => ({ $id: "https://example.com/args", type: "object", properties: { a: { type: "string" } }, required: ["a"] }) as const;
    const invoker = makeInvoker([echoTool("one", { inputSchema: schema() }), echoTool("two", { inputSchema: schema() })]);
    const session = invoker.openSession();
    for (const name of ["one", "two"]) {
      expect((await invoker.invoke({ name, arguments: { a: "x" } }, { session })).status).toBe("ok");
      expect(await invoker.invoke({ name, arguments: { a: 1 } }, { session })).toMatchObject({ code: "INVALID_ARGUMENTS" });
    }
  });

  it("parses JSON-string arguments and treats empty ones as {}", async () => {
    const tool = echoTool();
    const invoker = makeInvoker([tool]);
    const session = invoker.openSession();
    expect((await invoker.invoke({ name: "echo", arguments: '{"a":[1,2]}' }, { session })).structured).toEqual({ a: [1, 2] });
    expect((await invoker.invoke({ name: "echo", arguments: "" }, { session })).status).toBe("ok");
    expect((await invoker.invoke({ name: "echo", arguments: undefined }, { session })).status).toBe("ok");
    expect(tool.calls.map((c) => c.args)).toEqual([{ a: [1, 2] }, {}, {}]);
  });

  it("reports unparseable JSON with the parse error", async () => {
    const invoker = makeInvoker([echoTool()]);
    const session = invoker.openSession();
    const result = await invoker.invoke({ name: "echo", arguments: '{"a": 1,' }, { session });
    expect(result).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
    expect(result.text).toMatch(/^Arguments are not valid JSON: .*JSON/);
    expect(session.trace[0]).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
  });

  it.each([
    ["an array", [1, 2], "an array"],
    ["a number", 42, "a number"],
    ["null", null, "null"],
    ["a JSON array string", "[1]", "an array"],
    ["a boolean", true, "a boolean"],
  ])("refuses %s as arguments", async (_label, args, kind) => {
    const tool = echoTool();
    const invoker = makeInvoker([tool]);
    const session = invoker.openSession();
    const result = await invoker.invoke({ name: "echo", arguments: args }, { session });
    expect(result).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
    expect(result.text).toContain(`got ${kind}`);
    expect(tool.calls).toHaveLength(0);
    expect(session.trace).toHaveLength(1);
  });

  it("refuses non-plain data (a cycle, a function) with the path", async () => {
    const invoker = makeInvoker([echoTool()]);
    const session = invoker.openSession();
    const cyclic: Record<string, unknown> = {};
    cyclic.me = cyclic;
    const a = await invoker.invoke({ name: "echo", arguments: { x: cyclic } }, { session });
    expect(a.text).toContain('argument "x.me" refers back to itself');
    const b = await invoker.invoke({ name: "echo", arguments: { cb: () => 1 } }, { session });
    expect(b.text).toContain('argument "cb" is a function');
    expect(session.trace.map((r) => r.code)).toEqual(["INVALID_ARGUMENTS", "INVALID_ARGUMENTS"]);
  });

  describe("JSON-string arguments (taken as parsed when they need no copy)", () => {
    it("hands the tool the parsed tree, equal to the copy an object argument gets", async () => {
      const tool = echoTool();
      const invoker = makeInvoker([tool]);
      const session = invoker.openSession();
      const json = '{"b":[1,{"c":null,"d":"x"}],"a":{"e":-0,"f":true},"1":2}';
      await invoker.invoke({ name: "echo", arguments: json }, { session });
      await invoker.invoke({ name: "echo", arguments: JSON.parse(json) as Record<string, unknown> }, { session });
      const [fromText, fromObject] = tool.calls.map((call) => call.args);
      expect(fromText).toStrictEqual(fromObject);
      expect(Object.keys(fromText as object)).toEqual(["1", "b", "a"]);
      expect(session.trace[0]?.argsDigest).toBe(session.trace[1]?.argsDigest);
    });

    it("still refuses a tree nested past the depth limit, with the same words as for an object", async () => {
      const invoker = makeInvoker([echoTool()]);
      const session = invoker.openSession();
      const json = `{"a":${"[".repeat(70)}${"]".repeat(70)}}`;
      const fromText = await invoker.invoke({ name: "echo", arguments: json }, { session });
      const fromObject = await invoker.invoke({ name: "echo", arguments: JSON.parse(json) as Record<string, unknown> }, { session });
      expect(fromText).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
      expect(fromText.text).toMatch(/nested deeper than 64 levels/);
      expect(fromText.text).toBe(fromObject.text);
    });

    it("drops a __proto__ key found deep inside", async () => {
      const tool = echoTool();
      const invoker = makeInvoker([tool]);
      await invoker.invoke({ name: "echo", arguments: '{"a":[{"b":{"__proto__":{"polluted":true},"c":1}}]}' }, { session: invoker.openSession() });
      expect(tool.calls[0]?.args).toStrictEqual({ a: [{ b: { c: 1 } }] });
    });
  });

  describe("prototype pollution", () => {
    it("drops __proto__ from JSON-string arguments; the tool never sees it", async () => {
      const tool = echoTool();
      const invoker = makeInvoker([tool]);
      const result = await invoker.invoke(
        { name: "echo", arguments: '{"__proto__": {"polluted": true}, "a": 1}' },
        { session: invoker.openSession() },
      );
      expect(result.status).toBe("ok");
      const seen = tool.calls[0]?.args as Record<string, unknown>;
      expect(Object.keys(seen)).toEqual(["a"]);
      expect(Object.getPrototypeOf(seen)).toBe(Object.prototype);
      expect(seen.polluted).toBeUndefined();
      expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    });

    it("drops __proto__ own keys of object arguments", async () => {
      const tool = echoTool();
      const invoker = makeInvoker([tool]);
      const args = JSON.parse('{"nested": {"__proto__": {"polluted": true}}}');
      await invoker.invoke({ name: "echo", arguments: args }, { session: invoker.openSession() });
      const nested = (tool.calls[0]?.args as { nested: object }).nested;
      expect(Object.keys(nested)).toEqual([]);
      expect(Object.getPrototypeOf(nested)).toBe(Object.prototype);
      expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    });

    it("keeps constructor.prototype keys as data without polluting", async () => {
      const tool = echoTool();
      const invoker = makeInvoker([tool]);
      const result = await invoker.invoke(
        { name: "echo", arguments: '{"constructor": {"prototype": {"polluted": true}}}' },
        { session: invoker.openSession() },
      );
      expect(result.status).toBe("ok");
      expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
      expect((Object.prototype as { polluted?: unknown }).polluted).toBeUndefined();
    });
  });

  it("refuses a getter whose value changes on each read without reading it; neither approver nor tool sees it", async () => {
    let reads = 0;
    const args = {
      get amount() {
        return ++reads * 100;
      },
    };
    const handler = approver("approved");
    const tool = echoTool("pay", { risk: "high" });
    const invoker = makeInvoker([tool], { approvalHandler: handler });
    const result = await invoker.invoke({ name: "pay", arguments: args }, { session: invoker.openSession() });
    expect(result).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
    expect(result.text).toContain('argument "amount" is a getter/setter property');
    expect(reads).toBe(0);
    expect(handler.requests).toHaveLength(0);
    expect(tool.calls).toHaveLength(0);
  });

  it("refuses a proxy without running its traps", async () => {
    let traps = 0;
    const args = new Proxy({ a: 1 }, {
      ownKeys(target) {
        traps++;
        return Reflect.ownKeys(target);
      },
      get(target, key) {
        traps++;
        return Reflect.get(target, key);
      },
    });
    const invoker = makeInvoker([echoTool()]);
    const result = await invoker.invoke({ name: "echo", arguments: args }, { session: invoker.openSession() });
    expect(result).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
    expect(result.text).toContain("Proxy");
    expect(traps).toBe(0);
  });

  it("digests the argument copy: equal arguments in any key order give one digest", async () => {
    const invoker = makeInvoker([localTool("t", () => "ok")]);
    const session = invoker.openSession();
    await invoker.invoke({ name: "t", arguments: { a: 1, b: 2 } }, { session });
    await invoker.invoke({ name: "t", arguments: '{"b":2,"a":1}' }, { session });
    await invoker.invoke({ name: "t", arguments: { a: 1, b: 3 } }, { session });
    const [x, y, z] = session.trace.map((r) => r.argsDigest);
    expect(x).toBe(y);
    expect(x).not.toBe(z);
  });

  it("digests the arguments as passed, even when the tool changes the object it is handed", async () => {
    const mutating = localTool("mutate", (args) => {
      args.n = 99;
      (args.nested as Record<string, unknown>).added = true;
      return "ok";
    });
    const invoker = makeInvoker([mutating, localTool("plain", () => "ok")]);
    const session = invoker.openSession();
    await invoker.invoke({ name: "mutate", arguments: { n: 1, nested: { a: 1 } } }, { session });
    await invoker.invoke({ name: "plain", arguments: { n: 1, nested: { a: 1 } } }, { session });
    expect(mutating.calls[0]?.args).toEqual({ n: 99, nested: { a: 1, added: true } });
    const [changed, untouched] = session.trace.map((r) => r.argsDigest);
    expect(changed).toBe(digestJson({ n: 1, nested: { a: 1 } }));
    expect(changed).toBe(untouched);
  });
});
