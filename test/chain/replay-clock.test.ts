import { describe, expect, it } from "vitest";
import { defineTool, MemoryTraceStore, replay, resumeChain, ToolChainTool } from "../../src/index.ts";

/** A slow safe lookup, then an email whose body carries a timestamp the script computed after it. */
function reportTools(sent: string[]) {
  return [
    defineTool({
      name: "lookup",
      description: "A slow safe read.",
      inputSchema: { type: "object", properties: {} } as const,
      execute: async () => {
        await new Promise((resolve) => setTimeout(resolve, 120));
        return { email: "ceo@example.com" };
      },
    }),
    defineTool({
      name: "send_email",
      description: "Sends an email.",
      risk: "high",
      inputSchema: { type: "object", properties: { to: { type: "string" }, body: { type: "string" } }, required: ["to", "body"] } as const,
      execute: ({ to, body }) => {
        sent.push(`${to}: ${body}`);
        return { sent: to };
      },
    }),
  ];
}

const SCRIPT = `
const who = await tools.lookup({});
const mail = await tools.send_email({ to: who.structured.email, body: "report generated " + new Date().toISOString() });
return { mail: mail.status, at: Date.now() };`;

describe.each(["in-process", "process"] as const)("the clock on replay (%s driver)", (driver) => {
  it("reads back the recorded times: a suspended email with a timestamp resumes without diverging", async () => {
    const store = new MemoryTraceStore();
    const sent: string[] = [];
    const tools = reportTools(sent);
    const chain = new ToolChainTool({ tools, traceStore: store, driver, approvalMode: "suspend" });
    const suspended = await chain.run(SCRIPT, { chainId: "stamped" });
    await chain.close();
    expect(suspended.status).toBe("suspended");
    const trace = await store.load("stamped");
    expect(trace.clockReadings?.length).toBeGreaterThanOrEqual(2);
    const [elapsed] = trace.clockReadings ?? [];
    expect(elapsed).toBeGreaterThanOrEqual(100); // read after the slow lookup

    // The resume answers the lookup at once from the trace, yet the script computes the same body.
    const report = await resumeChain("stamped", "approved", { traceStore: store, tools, driver });
    expect(report.divergence).toBeUndefined();
    expect(report.liveCalls).toEqual(["c1"]);
    expect(report.run.status).toBe("ok");
    expect(sent).toEqual([`ceo@example.com: report generated ${new Date(trace.clockStart + (elapsed as number)).toISOString()}`]);

    // And a strict replay of the resumed chain sees the same times again.
    const resumed = await store.load(report.run.chainId);
    const strict = await replay(resumed, { mode: "strict", driver });
    expect(strict.identical).toBe(true);
    expect(strict.run.returnValue).toEqual(report.run.returnValue);
  }, 30_000);
  it("formats the virtual time when Intl.DateTimeFormat is given no date, and replays it", async () => {
    const store = new MemoryTraceStore();
    const chain = new ToolChainTool({ tools: reportTools([]), traceStore: store, driver });
    const script =
      'const f = new Intl.DateTimeFormat("en-GB", { timeZone: "UTC", dateStyle: "short", timeStyle: "medium" });\n' +
      "await tools.lookup({});\n" +
      'return [f.format(), f.formatToParts().map((part) => part.value).join(""), f.format(new Date()), [0].map(f.format)[0]];';
    const run = await chain.run(script, { chainId: "intl", clockStart: Date.UTC(2001, 2, 3, 4, 5, 6) });
    await chain.close();
    expect(run.status).toBe("ok");
    const [noDate, parts, withDate, epoch] = run.returnValue as string[];
    expect(noDate).toMatch(/^03\/03\/2001, 04:05:0\d$/);
    expect(parts).toBe(noDate);
    expect(withDate).toBe(noDate);
    expect(epoch).toBe("01/01/1970, 00:00:00");
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const strict = await replay(await store.load("intl"), { mode: "strict", driver });
    expect(strict.identical, strict.divergence?.message).toBe(true);
  }, 30_000);
  it("reads the resume's time once the recorded readings run out, not the old run's", async () => {
    const store = new MemoryTraceStore();
    const sent: string[] = [];
    const tools = reportTools(sent);
    const chain = new ToolChainTool({ tools, traceStore: store, driver, approvalMode: "suspend" });
    const day = 86_400_000;
    const suspended = await chain.run('await tools.send_email({ to: "a@example.com", body: "b" });\nreturn Date.now();', { chainId: "approved-late" });
    await chain.close();
    expect(suspended.status).toBe("suspended");
    // As if suspended a day ago, on real time (its clock started as the chain did), approved now.
    const recorded = await store.load("approved-late");
    const dayOld = { ...recorded, createdAt: recorded.createdAt - day, clockStart: recorded.clockStart - day };
    const resumedAt = Date.now();
    const report = await resumeChain("approved-late", "approved", { traceStore: store, trace: dayOld, tools, driver });
    expect(report.run.status).toBe("ok");
    expect(report.run.returnValue as number).toBeGreaterThanOrEqual(resumedAt - 1_000);
    expect(report.run.returnValue as number).toBeLessThanOrEqual(Date.now() + 1_000);
    // And the resumed chain replays with the times it read.
    const strict = await replay(await store.load(report.run.chainId), { mode: "strict", driver });
    expect(strict.identical, strict.divergence?.message).toBe(true);
    // A clock its caller chose (a fixed day) is kept: see the suspend tests (day "2026-01-15").
  }, 30_000);
});
