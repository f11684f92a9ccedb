import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isChainRuntimeError } from "../../src/kernel/index.ts";
import { exportTraceJson } from "../../src/trace/export-trace-json.ts";
import { FileTraceStore } from "../../src/trace/file-trace-store.ts";
import { foldTraceEvents } from "../../src/trace/fold-trace-events.ts";
import { loadTraceFile } from "../../src/trace/load-trace-file.ts";
import { encodeTraceFrame } from "../../src/trace/trace-frame-codec.ts";
import { chainEndEvent, chainStartEvent, toolCallEvent, toolResultEvent } from "./fixtures/sample-events.ts";

let dir: string;
let exported: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "isochain-load-"));
  exported = exportTraceJson(foldTraceEvents([chainStartEvent("exported-1"), toolCallEvent(0), toolResultEvent(0), chainEndEvent()]));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** What `loadTraceFile(path)` rejects with. */
async function refusal(path: string): Promise<{ code: string; message: string; details?: unknown }> {
  const error: unknown = await loadTraceFile(path).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(isChainRuntimeError(error), String(error)).toBe(true);
  return error as { code: string; message: string; details?: unknown };
}

describe("loadTraceFile's path", () => {
  it("is a non-empty string, or ARGUMENT_INVALID (not a store failure)", async () => {
    for (const path of [5, undefined, "", { toString: () => "x" }]) {
      const error = await refusal(path as string);
      expect(error.code).toBe("ARGUMENT_INVALID");
      expect(error.message).toMatch(/^loadTraceFile\(\) needs the path of a \.trace file; got /);
    }
  });
});

describe("loadTraceFile on a trace exported as JSON", () => {
  it("says it is a JSON export, not a log, and to pass the chain id or its .trace file (TRACE_INVALID)", async () => {
    for (const name of ["exported.json", "exported.trace"]) {
      const path = join(dir, name);
      await writeFile(path, exported);
      const error = await refusal(path);
      expect(error.code).toBe("TRACE_INVALID");
      expect(error.message).toBe(
        `${path} is a trace exported as JSON (by \`isochain trace export\`), not a trace log, the records a trace store writes and replay reads. ` +
          "Pass the chain id (exported-1) or its .trace file (exported-1.trace in the store's traces folder) instead.",
      );
      expect(error.details).toEqual({ path, chainId: "exported-1" });
    }
  });

  it("knows JSON after a byte order mark and whitespace, and without a chain id, but only at the start of the file", async () => {
    const bom = join(dir, "bom.trace");
    await writeFile(bom, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(` \r\n\t${exported}`)]));
    expect((await refusal(bom)).message).toContain("is a trace exported as JSON (by `isochain trace export`)");
    const empty = join(dir, "empty.trace");
    await writeFile(empty, "{}\n");
    expect(await refusal(empty)).toMatchObject({
      code: "TRACE_INVALID",
      message: `${empty} is JSON (a trace exported by \`isochain trace export\`?), not a trace log, the records a trace store writes and replay reads. Pass the chain id or its .trace file instead.`,
    });
    // A log damaged after its first record is still a damaged log, whatever follows.
    const damaged = join(dir, "damaged.trace");
    await writeFile(damaged, Buffer.concat([encodeTraceFrame(chainStartEvent("d")), Buffer.from('{"a": 1}')]));
    expect((await refusal(damaged)).message).toMatch(/claims \d+ bytes, past the end of the log, but is not a record cut short by a crash/);
  });

  it("says so when a store finds a JSON export under a chain's name", async () => {
    const traces = join(dir, "traces");
    const store = new FileTraceStore({ dir: traces });
    await store.append("stored", chainStartEvent("stored"));
    await store.close();
    await writeFile(join(traces, "stored.trace"), exported);
    await expect(store.load("stored")).rejects.toThrow(/stored\.trace is a trace exported as JSON/);
  });
});
