/**
 * Large result texts cross the bridge apart from their JSON (src/bridge/wire-result.ts): the
 * script must see exactly the text the tool returned, with the result's keys in the usual order,
 * alone or inside a batch of parallel results, through both drivers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineTool, MemoryBlobStore, ToolChainTool, Toolbox } from "../../src/index.ts";
import { RAW_TEXT_MIN_LENGTH } from "../../src/bridge/wire-result.ts";

/** Pieces the texts repeat: one-byte, two-byte with an astral character, and lone surrogates. */
const PIECES = { ascii: "ab", unicode: "é€😀z", lone: "a\ud800b\udc00" } as const;
type Piece = keyof typeof PIECES;

const text = defineTool({
  name: "text",
  description: "Returns a text of `times` repetitions of a piece.",
  inputSchema: {
    type: "object",
    properties: { piece: { type: "string", enum: Object.keys(PIECES) }, times: { type: "integer" } },
    required: ["piece", "times"],
  } as const,
  execute: ({ piece, times }) => PIECES[piece as Piece].repeat(times),
});
const rows = defineTool({
  name: "rows",
  description: "Returns structured rows (their JSON text is large).",
  inputSchema: { type: "object", properties: { count: { type: "integer" } }, required: ["count"] } as const,
  execute: ({ count }) => ({ rows: Array.from({ length: count }, (_, i) => ({ id: i, name: `row "${i}"\n` })) }),
});

/** In-script helpers: the same pieces, and a check that does not return the text itself. */
const PRELUDE = `
const PIECES = { ascii: "ab", unicode: "é€😀z", lone: "a\\ud800b\\udc00" };
const check = (r, piece, times) => r.status === "ok" && r.text === PIECES[piece].repeat(times) ? Object.keys(r).join(",") : "mismatch: " + r.status + " " + String(r.text).length;
`;

const LARGE = Math.ceil((RAW_TEXT_MIN_LENGTH * 4) / 2);

describe.each(["in-process", "process"] as const)("large result texts through the %s driver", (driver) => {
  let chain: ToolChainTool;

  beforeAll(() => {
    chain = new ToolChainTool({
      toolbox: new Toolbox([text, rows]),
      blobStore: new MemoryBlobStore(),
      driver,
      poolSize: 1,
      policy: { maxInlineResultBytes: 8 * 1024 * 1024, totalTimeoutMs: 20_000, cpuTimeMs: 10_000 },
    });
  });

  afterAll(async () => {
    await chain.close();
  });

  it.each(Object.keys(PIECES) as Piece[])("delivers a large %s text exactly, keys in the usual order", async (piece) => {
    const run = await chain.run(`${PRELUDE}
      const small = await tools.text({ piece: "${piece}", times: 3 });
      const large = await tools.text({ piece: "${piece}", times: ${LARGE} });
      return [check(small, "${piece}", 3), check(large, "${piece}", ${LARGE})];
    `);
    expect(run.status).toBe("ok");
    const [small, large] = run.returnValue as [string, string];
    expect(small).not.toMatch(/^mismatch/);
    expect(large).toBe(small);
  });

  it("delivers large and small texts settled together in one batch", async () => {
    const run = await chain.run(`${PRELUDE}
      const [a, b, c, d, e] = await Promise.all([
        tools.text({ piece: "unicode", times: ${LARGE} }),
        tools.text({ piece: "ascii", times: 5 }),
        tools.text({ piece: "ascii", times: ${LARGE + 7} }),
        tools.text({ piece: "lone", times: ${LARGE} }),
        tools.text({ piece: "lone", times: 2 }),
      ]);
      return [check(a, "unicode", ${LARGE}), check(b, "ascii", 5), check(c, "ascii", ${LARGE + 7}), check(d, "lone", ${LARGE}), check(e, "lone", 2)];
    `);
    expect(run.status).toBe("ok");
    expect(run.returnValue).toEqual(Array.from({ length: 5 }, () => "status,text"));
    expect(run.callTrace).toHaveLength(5);
  });

  it("delivers a large structured result: its JSON text and its object", async () => {
    const run = await chain.run(`
      const r = await tools.rows({ count: 4000 });
      const parsed = JSON.parse(r.text);
      return [Object.keys(r).join(","), parsed.rows.length, r.structured.rows[3999].name, parsed.rows[17].name === r.structured.rows[17].name];
    `);
    expect(run.status).toBe("ok");
    expect(run.returnValue).toEqual(["status,text,structured", 4000, 'row "3999"\n', true]);
  });

  it("keeps results right when the script patched the String methods the prelude uses", async () => {
    const run = await chain.run(`${PRELUDE}
      String.prototype.split = () => ["0"];
      String.prototype.slice = () => "patched";
      String.prototype.indexOf = () => -1;
      const [a, b] = await Promise.all([tools.text({ piece: "unicode", times: ${LARGE} }), tools.text({ piece: "ascii", times: ${LARGE} })]);
      return [a.text === PIECES.unicode.repeat(${LARGE}), b.text === PIECES.ascii.repeat(${LARGE})];
    `);
    expect(run.status).toBe("ok");
    expect(run.returnValue).toEqual([true, true]);
  });
});
