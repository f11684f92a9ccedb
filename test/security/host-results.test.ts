/**
 * Attack family: what host tools hand back. Garbage results (undefined, cycles, BigInt,
 * functions, class instances, promises, symbols) become a clear `RESULT_INVALID` for that call
 * and the chain goes on; results go into the isolate as JSON text only, so no host object,
 * function or prototype crosses. A Node `Buffer` (pooled: its `ArrayBuffer` holds other
 * allocations' bytes) reaches the script as exactly its own content or is refused; no neighbour
 * byte of the pool ever shows.
 */
import { expect } from "vitest";
import { defineTool } from "../../src/index.ts";
import { runAttackTable } from "./attack-table.ts";
import type { Attack } from "./harness.ts";

const SECRET = "SECRET-POOL-NEIGHBOUR-7f3a";

/** A pooled Buffer with the secret in the same pool slab on both sides. */
function pooledAbc(): Buffer {
  Buffer.from(SECRET);
  const buf = Buffer.from("abc");
  Buffer.from(SECRET);
  if (buf.buffer.byteLength <= 3) throw new Error("expected a pooled Buffer");
  return buf;
}

const bufferTool = defineTool({
  name: "buffer",
  description: "Returns a pooled Buffer in several shapes.",
  inputSchema: { type: "object", properties: { shape: { type: "string" } }, required: ["shape"] } as const,
  execute: ({ shape }) => {
    const buf = pooledAbc();
    switch (shape) {
      case "top":
        return buf;
      case "structured":
        return { content: [{ type: "text" as const, text: "bytes" }], structuredContent: { data: buf } };
      case "plain-field":
        return { data: buf };
      case "text-block":
        return { content: [{ type: "text" as const, text: buf as unknown as string }] };
      case "to-string":
        return { content: [{ type: "text" as const, text: buf.toString("utf8") }] };
      case "base64":
        return { data: buf.toString("base64") };
      case "view":
        return { bytes: [...new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength)] };
      default:
        throw new Error(`unknown shape ${shape}`);
    }
  },
});

/** A value whose toJSON, toString and valueOf throw the value itself. */
function selfRethrowing(): object {
  const bad = {};
  const rethrow = (): never => {
    throw bad;
  };
  Object.defineProperties(bad, { toJSON: { value: rethrow }, toString: { value: rethrow }, valueOf: { value: rethrow } });
  return bad;
}

const raiseTool = defineTool({
  name: "raise",
  description: "Throws a value that cannot be described.",
  inputSchema: { type: "object", properties: { shape: { type: "string" } }, required: ["shape"] } as const,
  execute: ({ shape }) => {
    if (shape === "object") throw selfRethrowing();
    // An Error whose name and message getters throw the error itself.
    const error = new Error("hidden");
    Object.defineProperty(error, "message", {
      get: () => {
        throw error;
      },
    });
    Object.defineProperty(error, "name", {
      get: () => {
        throw error;
      },
    });
    throw error;
  },
});

/** Calls a tool and returns [status, code, text, structured] plus whether the secret leaked. */
const call = (expression: string): string => `
  const r = await ${expression};
  const leaked = JSON.stringify(r).includes(${JSON.stringify(SECRET.slice(0, 10))});
  return [r.status, r.code ?? null, r.status === "ok" ? r.text : null, r.structured ?? null, leaked];
`;
const invalid = { status: "ok" as const, returnValue: ["error", "RESULT_INVALID", null, null, false] };

const attacks: Attack[] = [
  { name: "tool returns undefined", code: call('tools.emit({ kind: "undefined" })'), expected: invalid },
  { name: "tool returns a cycle", code: call('tools.emit({ kind: "cyclic" })'), expected: invalid },
  { name: "tool returns a BigInt", code: call('tools.emit({ kind: "bigint" })'), expected: invalid },
  { name: "tool returns a host function", code: call('tools.emit({ kind: "function" })'), expected: invalid },
  { name: "tool returns a class instance (URL)", code: call('tools.emit({ kind: "class-instance" })'), expected: {
    status: "ok",
    // URL has toJSON: honoured like JSON.stringify, so only its string crosses.
    returnValue: ["ok", null, '"https://example.com/"', { value: "https://example.com/" }, false],
  } },
  { name: "tool returns a promise inside its result", code: call('tools.emit({ kind: "promise" })'), expected: invalid },
  { name: "tool returns a symbol", code: call('tools.emit({ kind: "symbol" })'), expected: invalid },
  { name: "tool returns NaN", code: call('tools.emit({ kind: "nan-infinity" })'), expected: invalid },
  {
    name: "tool returns a getter: its value crosses, not the getter",
    code: call('tools.emit({ kind: "getter" })'),
    expected: { status: "ok", returnValue: ["ok", null, '{"secret":"getter ran"}', { secret: "getter ran" }, false] },
  },
  {
    name: "tool returns a proxy: only its data crosses",
    code: call('tools.emit({ kind: "proxy" })'),
    expected: { status: "ok", returnValue: ["ok", null, '{"a":1}', { a: 1 }, false] },
  },
  {
    name: "tool returns an own toJSON: honoured on the host, data only crosses",
    code: call('tools.emit({ kind: "to-json" })'),
    expected: { status: "ok", returnValue: ["ok", null, '{"swapped":true}', { swapped: true }, false] },
  },
  {
    name: "results are plain isolate objects with nothing callable",
    code: 'const r = await tools.echo({ value: { a: [1] } }); const walk = (v: any): boolean => v === null || typeof v !== "object" ? typeof v !== "function" : Object.getPrototypeOf(v) === (Array.isArray(v) ? Array.prototype : Object.prototype) && Object.values(v).every(walk); return [walk(r), Object.isFrozen(r)];',
    expected: { status: "ok", returnValue: [true, false] },
  },
  {
    name: "result getter throws a value that rethrows itself when described",
    code: call('tools.emit({ kind: "self-rethrowing-getter" })'),
    expected: {
      status: "ok",
      returnValue: ["error", "RESULT_INVALID", null, null, false],
    },
  },
  {
    // Awaiting the result reads its `then`, which throws: the tool's own failure.
    name: "result is a proxy whose traps throw the proxy",
    code: call('tools.emit({ kind: "self-rethrowing-proxy" })'),
    expected: { status: "ok", returnValue: ["error", "TOOL_ERROR", null, null, false] },
  },
  {
    name: "tool throws a value that rethrows itself when described: TOOL_ERROR, traced",
    code: 'const r = await tools.raise({ shape: "object" }); return [r.status, r.code, r.text];',
    expected: { status: "ok", returnValue: ["error", "TOOL_ERROR", 'Tool "raise" threw a non-Error value: an unprintable value'] },
  },
  {
    name: "tool throws an Error whose name and message getters rethrow it: TOOL_ERROR, traced",
    code: 'const r = await tools.raise({ shape: "error" }); return [r.status, r.code, r.text];',
    expected: { status: "ok", returnValue: ["error", "TOOL_ERROR", 'Tool "raise" threw an Error whose name or message cannot be read.'] },
  },
  { name: "pooled Buffer returned as the result", code: call('tools.buffer({ shape: "top" })'), expected: invalid },
  { name: "pooled Buffer inside structuredContent", code: call('tools.buffer({ shape: "structured" })'), expected: invalid },
  { name: "pooled Buffer inside a plain result", code: call('tools.buffer({ shape: "plain-field" })'), expected: invalid },
  { name: "pooled Buffer as a text block's text", code: call('tools.buffer({ shape: "text-block" })'), expected: invalid },
  {
    name: "pooled Buffer decoded to text arrives as exactly its content",
    code: call('tools.buffer({ shape: "to-string" })'),
    expected: { status: "ok", returnValue: ["ok", null, "abc", null, false] },
  },
  {
    name: "pooled Buffer as base64 arrives as exactly its bytes",
    code: call('tools.buffer({ shape: "base64" })'),
    expected: { status: "ok", returnValue: ["ok", null, '{"data":"YWJj"}', { data: "YWJj" }, false] },
  },
  {
    name: "pooled Buffer's own view arrives as exactly its bytes",
    code: call('tools.buffer({ shape: "view" })'),
    expected: { status: "ok", returnValue: ["ok", null, '{"bytes":[97,98,99]}', { bytes: [97, 98, 99] }, false] },
  },
];

runAttackTable("host results", attacks, {
  tools: [bufferTool, raiseTool],
  after: (harness) => {
    // The refused results never stopped the chain: the trace shows them as RESULT_INVALID.
    expect(harness.ledger.violations).toEqual([]);
  },
});
