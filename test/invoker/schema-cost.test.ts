/**
 * Validation cost a script's arguments cannot blow up: the host validates every call on its own
 * thread, so a keyword whose cost grows faster than the argument would let a script stall or
 * crash the host. Each case below took from tens of seconds to a host out of memory before.
 */
import { describe, expect, it } from "vitest";
import { defineTool } from "../../src/toolbox/define-tool.ts";
import { echoTool, makeInvoker } from "./invoker-fixtures.ts";

/** A tree node whose child is one of two node kinds: an ordinary recursive union. */
const treeSchema = {
  type: "object",
  properties: { root: { $ref: "#/definitions/node" } },
  required: ["root"],
  definitions: {
    node: {
      anyOf: [
        { type: "object", properties: { kind: { const: "folder" }, child: { $ref: "#/definitions/node" } }, required: ["kind"] },
        { type: "object", properties: { kind: { const: "link" }, child: { $ref: "#/definitions/node" } }, required: ["kind"] },
      ],
    },
  },
} as const;

function nested(depth: number, kind: string): Record<string, unknown> {
  let node: Record<string, unknown> = { kind };
  for (let i = 1; i < depth; i++) node = { kind, child: node };
  return node;
}

describe("schema validation cost", () => {
  it("refuses a deeply nested argument against a recursive anyOf at once (every error was exponential in its depth)", async () => {
    const tool = echoTool("save_tree", { inputSchema: treeSchema });
    const invoker = makeInvoker([tool]);
    const session = invoker.openSession();
    // 40 levels: with every error collected, 22 already ran the host out of memory.
    const refused = await invoker.invoke({ name: "save_tree", arguments: { root: nested(40, "nope") } }, { session });
    expect(refused).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
    expect(refused.text).toContain('argument "root.kind" must be "folder"');
    const fine = await invoker.invoke({ name: "save_tree", arguments: { root: nested(40, "folder") } }, { session });
    expect(fine.status).toBe("ok");
  });

  it("checks uniqueItems in linear time, with JSON equality (key order does not matter, types do)", async () => {
    const tool = echoTool("import_rows", {
      inputSchema: { type: "object", properties: { rows: { type: "array", uniqueItems: true } }, required: ["rows"] },
    });
    const invoker = makeInvoker([tool]);
    const session = invoker.openSession();
    // 40 000 distinct objects (within the argument's 100 000 values): ajv's pairwise comparison
    // held the host for about 30 s.
    const rows = Array.from({ length: 40_000 }, (_, i) => ({ i }));
    expect((await invoker.invoke({ name: "import_rows", arguments: { rows } }, { session })).status).toBe("ok");
    const duplicated = await invoker.invoke({ name: "import_rows", arguments: { rows: [...rows, { i: 0 }] } }, { session });
    expect(duplicated).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
    expect(duplicated.text).toContain("items ## 0 and 40000 are identical");
    const reordered = await invoker.invoke({ name: "import_rows", arguments: { rows: [1, "1", [1], { a: [1, 2], b: 1 }, { a: [2, 1], b: 1 }, { b: 1, a: [2, 1] }] } }, { session });
    expect(reordered.text).toContain("items ## 4 and 5 are identical");
  });

  it("checks a large enum when the tool is defined without comparing every pair, and still refuses a repeated value", () => {
    const values = Array.from({ length: 60_000 }, (_, i) => `v${i}`);
    const tool = defineTool({
      name: "pick",
      description: "",
      inputSchema: { type: "object", properties: { v: { enum: values } } },
      execute: () => "ok",
    });
    expect(tool.name).toBe("pick");
    expect(() =>
      defineTool({ name: "pick_twice", description: "", inputSchema: { type: "object", properties: { v: { enum: ["a", "b", "a"] } } }, execute: () => "ok" }),
    ).toThrow(/duplicate items/);
  });
});
