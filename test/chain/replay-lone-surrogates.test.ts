import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { defineTool, FileTraceStore, loadTraceFile, replay, resumeChain, ToolChainTool } from "../../src/index.ts";

/** Text UTF-8 cannot hold: a lone high surrogate between two letters, and a lone low one in a long string. */
const SHORT = "a\uD800b";
const LONG = `${"x".repeat(100)}\uDC00${"y".repeat(100)}`;

let weirdCalls = 0;
const weird = defineTool({
  name: "weird",
  description: "Returns text holding lone surrogates, in values and a key, and echoes its arguments.",
  inputSchema: { type: "object", additionalProperties: true } as const,
  execute: (args) => {
    weirdCalls++;
    return { short: SHORT, long: LONG, ["k\uDBFF"]: 1, echo: args };
  },
});
const sent: unknown[] = [];
const send = defineTool({
  name: "send_email",
  description: "Send.",
  risk: "high",
  inputSchema: { type: "object", properties: { to: { type: "string" }, body: { type: "string" } }, required: ["to", "body"] } as const,
  execute: (args) => {
    sent.push(args);
    return { sent: true };
  },
});

/** What the script saw, as UTF-16 code units; and a mail whose arguments (approval arguments, when suspended) hold the text. */
const SCRIPT = `
const r = await tools.weird({ s: "q\\uD83D", t: "\\uDE00".repeat(40) });
const s = r.structured;
const units = (text) => [...text].map((char) => char.charCodeAt(0));
const mail = await tools.send_email({ to: "ceo@example.com", body: s.short + s.long });
return { short: units(s.short), longHas: s.long.includes("\\uDC00"), key: units(Object.keys(s)[2]), echo: units(s.echo.s), mail: mail.status };
`;
const SAW = { short: [97, 0xd800, 98], longHas: true, key: [107, 0xdbff], echo: [113, 0xd83d], mail: "ok" };

const dirs: string[] = [];
function traceDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "isochain-lone-"));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe("a chain whose tools return lone surrogates", () => {
  it("replays identically from its trace file (the trace holds what the script saw)", async () => {
    const dir = traceDir();
    const chain = new ToolChainTool({ tools: [weird, send], traceStore: new FileTraceStore({ dir, fsync: false }), policy: { maxRiskUnapproved: "high" }, driver: "in-process" });
    const run = await chain.run(SCRIPT, { chainId: "lone" });
    await chain.close();
    expect(run.returnValue).toEqual(SAW);
    const trace = await loadTraceFile(join(dir, "lone.trace"));
    expect(trace.calls[1]?.args).toEqual({ to: "ceo@example.com", body: SHORT + LONG });
    const report = await replay(trace, { mode: "strict", driver: "in-process" });
    expect(report.divergence).toBeUndefined();
    expect(report.identical).toBe(true);
    expect(report.run.returnValue).toEqual(SAW);

    // The CLI reads the same file: a strict replay, and an export that writes each lone surrogate as a \u escape.
    const main = resolve("src/cli/main.ts");
    const cli = (...args: string[]) => spawnSync(process.execPath, ["--no-node-snapshot", main, ...args, "--store", dir], { encoding: "utf8", timeout: 60_000 });
    const replayed = cli("replay", join(dir, "lone.trace"));
    expect(replayed.status, replayed.stderr).toBe(0);
    expect(replayed.stdout).toContain("identical");
    const exported = cli("trace", "export", join(dir, "lone.trace"));
    expect(exported.status, exported.stderr).toBe(0);
    expect(JSON.parse(exported.stdout)).toMatchObject({ calls: [{ result: { structured: { short: SHORT, long: LONG } } }, {}] });
  });

  it("resumes after an approval with the text the script saw, and the approval's arguments as they were", async () => {
    const dir = traceDir();
    const traceStore = new FileTraceStore({ dir, fsync: false });
    const chain = new ToolChainTool({ tools: [weird, send], traceStore, approvalMode: "suspend", driver: "in-process" });
    const suspended = await chain.run(SCRIPT, { chainId: "lone-suspended" });
    await chain.close();
    expect(suspended.status).toBe("suspended");
    const trace = await new FileTraceStore({ dir }).load("lone-suspended");
    expect(trace.approvalRequests[0]?.args).toEqual({ to: "ceo@example.com", body: SHORT + LONG });

    weirdCalls = 0;
    sent.length = 0;
    const report = await resumeChain("lone-suspended", "approved", { traceStore, tools: [weird, send], driver: "in-process" });
    expect(report.divergence).toBeUndefined();
    expect(report.run.returnValue).toEqual(SAW);
    expect(report.replayedCalls).toEqual(["c0"]);
    expect(weirdCalls).toBe(0); // answered from the trace
    expect(sent).toEqual([{ to: "ceo@example.com", body: SHORT + LONG }]);
  });
});
