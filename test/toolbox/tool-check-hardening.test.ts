/**
 * The tool check against schemas and tools that are not what they seem: values JSON would write
 * differently from what ajv checks, getters and Proxies that throw or change their answer, `$ref`
 * loops and property names ajv cannot compile. Every refusal is a `ChainRuntimeError`.
 */
import { describe, expect, it } from "vitest";
import { brandChainTool, isChainTool, type AnyTool } from "../../src/kernel/index.ts";
import { defineTool } from "../../src/toolbox/define-tool.ts";
import { Toolbox } from "../../src/toolbox/toolbox.ts";
import { thrown } from "../support/thrown.ts";

const base = {
  name: "t",
  description: "d",
  inputSchema: { type: "object", properties: { n: { type: "number" } } } as const,
  execute: () => "ok",
};

/** A schema with `inner` as the schema of property `a`. */
const withProperty = (inner: unknown): object => ({ type: "object", properties: { a: inner } });

/** An array of `length` with no items at all. */
function sparse(length: number): unknown[] {
  const list: unknown[] = [];
  list.length = length;
  return list;
}

class Schema {
  type = "object";
}

describe("a schema must be JSON data that JSON writes as it is", () => {
  it.each([
    ["a toJSON method on the schema", { type: "object", properties: { n: { type: "number" } }, toJSON: () => ({ type: "string" }) }, "the root has a toJSON method"],
    ["a toJSON method on a subschema", withProperty({ type: "number", toJSON: () => ({}) }), "/properties/a has a toJSON method"],
    ["NaN", withProperty({ type: "number", minimum: Number.NaN }), "/properties/a/minimum is NaN, which JSON writes as null"],
    ["-Infinity", withProperty({ type: "number", maximum: -Infinity }), "/properties/a/maximum is -Infinity, which JSON writes as null"],
    ["a function", withProperty({ type: "number", default: () => 1 }), "/properties/a/default is a function, which JSON leaves out"],
    ["a symbol", withProperty({ const: Symbol("s") }), "/properties/a/const is a symbol"],
    ["a Date", withProperty({ const: new Date(0) }), "/properties/a/const is an instance of Date, not a plain object"],
    ["a Map", withProperty({ enum: new Map() }), "/properties/a/enum is an instance of Map"],
    ["a RegExp", withProperty({ type: "string", pattern: /x/ }), "/properties/a/pattern is an instance of RegExp"],
    ["a class instance", new Schema(), "the root is an instance of Schema"],
    ["inherited keywords", { type: "object", properties: Object.create({ a: { type: "string" } }) }, "/properties is an object with a custom prototype"],
    [
      "a __proto__ key in a literal (it sets the prototype)",
      { type: "object", properties: { __proto__: { type: "string" } } },
      '/properties is an object with a custom prototype (a "__proto__" key written in an object literal sets the prototype: write it as ["__proto__"] to mean a member)',
    ],
    ["undefined in an array", withProperty({ enum: [1, undefined] }), "/properties/a/enum/1 is undefined, which JSON writes as null"],
    ["a hole in an array", withProperty({ enum: [1, , 3] }), "/properties/a/enum/1 is an empty slot"],
    ["an array with a property besides its items", { type: "object", required: Object.assign(["a"], { extra: 1 }) }, '/required has a property "extra" besides its items'],
    [
      "a non-enumerable keyword",
      withProperty(Object.defineProperty({ type: "string" }, "minLength", { value: 3, enumerable: false })),
      '/properties/a has a non-enumerable property "minLength", which JSON leaves out and ajv reads',
    ],
  ])("refuses %s with TOOL_INVALID naming the path", (_case, inputSchema, said) => {
    const error = thrown(() => defineTool({ ...base, inputSchema } as never));
    expect(error).toMatchObject({ code: "TOOL_INVALID", details: { field: "inputSchema", tool: "t" } });
    expect(error.message).toContain("inputSchema must be JSON data (the model is shown it as JSON): ");
    expect(error.message).toContain(said);
    // A toolbox runs the same check on a tool that was not made with defineTool.
    expect(thrown(() => new Toolbox([{ ...base, inputSchema } as never])).message).toContain(said);
  });

  it("checks outputSchema the same way", () => {
    const error = thrown(() => defineTool({ ...base, outputSchema: { type: "object", properties: { at: { const: new Date(0) } } } } as never));
    expect(error).toMatchObject({ code: "TOOL_INVALID", details: { field: "outputSchema" } });
    expect(error.message).toContain("/properties/at/const is an instance of Date");
  });

  it("refuses a sparse array of length 2^32 - 1 at once, without walking its slots", () => {
    const started = performance.now();
    expect(thrown(() => defineTool({ ...base, inputSchema: withProperty({ enum: sparse(2 ** 32 - 1) }) } as never)).message).toContain(
      "/properties/a/enum/0 is an empty slot",
    );
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("still refuses what it refused before: BigInt and cycles, now with the path", () => {
    expect(thrown(() => defineTool({ ...base, inputSchema: withProperty({ default: 1n }) } as never)).message).toContain(
      "/properties/a/default is a BigInt",
    );
    const cyclic: { type: string; properties: Record<string, unknown> } = { type: "object", properties: {} };
    cyclic.properties.self = cyclic;
    expect(thrown(() => defineTool({ ...base, inputSchema: cyclic } as never)).message).toContain(
      "/properties/self refers back to one of its parents (a cycle)",
    );
  });

  it("accepts what JSON, ajv and the declarations read alike", () => {
    const typeBoxLike = { type: "object", [Symbol.for("TypeBox.Kind")]: "Object", properties: { a: { type: "string", [Symbol.for("TypeBox.Kind")]: "String" } } };
    for (const inputSchema of [
      { type: "object", description: undefined, properties: { a: { type: "string", default: undefined } } }, // undefined fields: absent everywhere
      typeBoxLike, // symbol keys: read by neither JSON nor ajv
      Object.assign(Object.create(null) as object, { type: "object" }),
      { type: "object", properties: { toJSON: { type: "string" } } }, // a property named toJSON is no method
      JSON.parse('{"type":"object","properties":{"__proto__":{"type":"string"}}}') as object,
      withProperty({ type: "number", minimum: -1e308, maximum: 1e308, enum: [0, 1.5, -2] }),
    ]) {
      expect(() => defineTool({ ...base, inputSchema } as never)).not.toThrow();
    }
  });
});

describe("a tool or schema that throws when read is TOOL_INVALID, never another error", () => {
  const boom = (): never => {
    throw new Error("boom");
  };

  it.each([
    ["a throwing getter", { type: "object", get properties(): never { return boom(); } }, "at /properties: boom"],
    ["a nested throwing getter", withProperty({ get type(): never { return boom(); } }), "at /properties/a/type: boom"],
    ["a Proxy whose ownKeys trap throws", new Proxy({ type: "object" }, { ownKeys: boom }), "at the root: boom"],
    [
      "a revoked Proxy inside",
      (() => {
        const { proxy, revoke } = Proxy.revocable({}, {});
        revoke();
        return withProperty(proxy);
      })(),
      "at /properties/a: Cannot perform",
    ],
  ])("%s in inputSchema", (_case, inputSchema, said) => {
    for (const check of [() => defineTool({ ...base, inputSchema } as never), () => new Toolbox([{ ...base, inputSchema } as never])]) {
      const error = thrown(check);
      expect(error).toMatchObject({ code: "TOOL_INVALID", details: { field: "inputSchema" } });
      expect(error.message).toContain(`inputSchema could not be read ${said}`);
    }
  });

  it("names the field of the tool that threw", () => {
    const { proxy: revoked, revoke } = Proxy.revocable({}, {});
    revoke();
    const cases: [unknown, string][] = [
      [{ ...base, get name(): never { return boom(); } }, "name"],
      [{ ...base, get execute(): never { return boom(); } }, "execute"],
      [{ ...base, inputSchema: revoked }, "inputSchema"],
      [{ name: "hosted", description: "d", providerSpecs: { openai: { get type(): never { return boom(); } } }, get callTypes(): never { return boom(); } }, "callTypes"],
      [{ name: "hosted", description: "d", get providerSpecs(): never { return boom(); } }, "providerSpecs"],
      [revoked, "tool"],
      [new Proxy({}, { get: boom }), "name"],
    ];
    for (const [tool, field] of cases) {
      const error = thrown(() => new Toolbox([tool as AnyTool]));
      expect(error).toMatchObject({ code: "TOOL_INVALID", details: { field } });
      expect(error.message).toContain(`${field} could not be read`);
    }
  });

  it("never calls a refused value's methods to describe it", () => {
    const name = { toJSON: boom, toString: boom };
    expect(thrown(() => new Toolbox([{ ...base, name } as never]))).toMatchObject({ code: "TOOL_INVALID", details: { field: "name" } });
    expect(thrown(() => new Toolbox([{ ...base, risk: 1n } as never])).message).toContain("risk must be");
    expect(thrown(() => new Toolbox([{ ...base, inputSchema: { type: 1n } } as never])).message).toContain('inputSchema must have type "object"; got bigint');
  });
});

describe("compile failures say where and why", () => {
  it.each([
    ["to itself", { type: "object", properties: { x: { $ref: "#/properties/x" } } }, 'the $ref at /properties/x refers to itself in a loop ("#/properties/x")'],
    [
      "through another $ref",
      { type: "object", properties: { p: { $ref: "#/definitions/a" } }, definitions: { a: { $ref: "#/definitions/b" }, b: { $ref: "#/definitions/a" } } },
      'the $ref at /properties/p leads into a loop of $refs ("#/definitions/a" → "#/definitions/b" → "#/definitions/a")',
    ],
    [
      "percent-encoded",
      { type: "object", properties: { p: { $ref: "#/definitions/a%20b" } }, definitions: { "a b": { $ref: "#/definitions/a%20b" } } },
      'the $ref at /properties/p leads into a loop of $refs ("#/definitions/a%20b" → "#/definitions/a%20b")',
    ],
  ])("a $ref that leads back %s names the $ref, not only a stack overflow", (_case, inputSchema, said) => {
    const error = thrown(() => defineTool({ ...base, inputSchema } as never));
    expect(error).toMatchObject({ code: "TOOL_INVALID", details: { field: "inputSchema" } });
    expect(error.message).toContain("inputSchema is not a valid JSON Schema (draft-07, as the invoker validates arguments): ");
    expect(error.message).toContain(said);
  });

  it("a property name with a lone surrogate names the property, not only 'URI malformed'", () => {
    const inputSchema = { type: "object", properties: { o: { type: "object", patternProperties: { "x\ud800": { type: "string" } } } } };
    const error = thrown(() => defineTool({ ...base, inputSchema } as never));
    expect(error).toMatchObject({ code: "TOOL_INVALID", details: { field: "inputSchema" } });
    expect(error.message).toContain('the property name "x\\ud800" in /properties/o/patternProperties holds a lone surrogate');
    expect(error.message.isWellFormed()).toBe(true);
  });
});

describe("what was checked is what is kept", () => {
  /** A tool whose name getter answers `first` for its first `reads` reads and `then` afterwards. */
  function shapeShifter(first: string, later: string, reads = 1): AnyTool & { reads: number } {
    const tool = {
      ...base,
      reads: 0,
      get name(): string {
        tool.reads++;
        return tool.reads <= reads ? first : later;
      },
    };
    return tool;
  }

  it("a toolbox keys a tool by the name it checked, read once", () => {
    const reserved = shapeShifter("innocent", "run_chain");
    const box = new Toolbox([reserved]);
    expect(reserved.reads).toBe(1);
    expect(box.names()).toEqual(["innocent"]);
    expect(box.has("run_chain")).toBe(false);
    expect(new Toolbox([shapeShifter("fine", "then")]).names()).toEqual(["fine"]);
    // Read once, so a name that is reserved when read is refused, whatever it says later.
    expect(thrown(() => new Toolbox([shapeShifter("run_chain", "innocent")])).code).toBe("TOOL_NAME_TAKEN");
  });

  it("defineTool refuses a field named close to one a tool has (a misspelt risk would leave the tool safe), and keeps the author's own", () => {
    for (const [slip, meant] of [
      ["riskLevel", "risk"],
      ["riks", "risk"],
      ["Risk", "risk"],
      ["input_schema", "inputSchema"],
      ["descripton", "description"],
      ["takescontrol", "takesControl"],
      ["outputSchma", "outputSchema"],
    ] as const) {
      const error = thrown(() => defineTool({ ...base, [slip]: "high" } as never));
      expect([error.code, error.details]).toEqual(["TOOL_INVALID", { field: slip, tool: "t" }]);
      expect(error.message).toContain(`Tool "t": defineTool() has no field ${JSON.stringify(slip)}; did you mean ${meant}`);
    }
    // Fields of the author's own (state execute reads through `this`) stay, however close to a tool field's name.
    const ownFields = ["client", "cache", "rate", "date", "note", "node", "disk", "list", "link", "task", "input", "output", "schema", "exec", "names", "level"];
    const own = defineTool({ ...base, ...Object.fromEntries(ownFields.map((field) => [field, 1])) } as never);
    expect(own.risk).toBe("safe");
  });

  it("defineTool keeps the values it checked, reading each field of the definition once", () => {
    const reads: Record<string, number> = {};
    const valid = { type: "object", properties: { a: { type: "string" } } };
    const definition = {
      value: 1,
      get name(): string {
        reads.name = (reads.name ?? 0) + 1;
        return reads.name === 1 ? "checked" : "then";
      },
      description: "d",
      get inputSchema(): object {
        reads.inputSchema = (reads.inputSchema ?? 0) + 1;
        return reads.inputSchema === 1 ? valid : { type: "object", properties: { a: { type: "strng" } } };
      },
      execute(this: { value: number }): number {
        return this.value;
      },
    };
    const tool = defineTool(definition as never);
    expect(reads).toEqual({ name: 1, inputSchema: 1 });
    expect(tool.name).toBe("checked");
    expect(tool.inputSchema).toBe(valid);
    // `execute` still runs as a method of the definition.
    expect(tool.execute({} as never, { signal: new AbortController().signal, callId: "c:0", check: () => {} })).toBe(1);
  });

  it("defineTool's tool cannot be renamed or given a new schema after a toolbox checked it, and can still be branded", () => {
    const tool = defineTool(base as never);
    const box = new Toolbox([tool]);
    const mutable = tool as unknown as Record<string, unknown>;
    expect(() => {
      mutable.name = "then";
    }).toThrow(TypeError);
    expect(() => {
      mutable.inputSchema = { type: "object", properties: { x: { type: "strng" } } };
    }).toThrow(TypeError);
    expect(() => Object.defineProperty(tool, "execute", { value: () => "other" })).toThrow(TypeError);
    expect(tool.name).toBe("t");
    expect(box.names()).toEqual(["t"]);
    expect(box.schemas("openai")).toMatchObject([{ function: { name: "t", parameters: base.inputSchema } }]);
    expect(Object.isFrozen(tool)).toBe(false);
    brandChainTool(tool);
    expect(isChainTool(tool)).toBe(true);
  });
});
