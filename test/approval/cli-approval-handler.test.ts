import { getEventListeners } from "node:events";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { CliApprovalHandler } from "../../src/approval/cli-approval-handler.ts";
import { makeApprovalRequest } from "../contracts/approval-store.contract.ts";

const live = (): AbortSignal => new AbortController().signal;

function terminal(maxArgsChars?: number) {
  const input = new PassThrough();
  const output = new PassThrough();
  let text = "";
  output.on("data", (chunk: Buffer) => {
    text += chunk.toString("utf8");
  });
  const handler = new CliApprovalHandler(maxArgsChars === undefined ? { input, output } : { input, output, maxArgsChars });
  return {
    input,
    output,
    handler,
    text: () => text,
    prompts: () => text.split("Approve? [y/N/s(kip)] ").length - 1,
    /** Resolves once `count` prompts have been shown. */
    async waitForPrompts(count: number): Promise<void> {
      const deadline = Date.now() + 2000;
      while (text.split("Approve? [y/N/s(kip)] ").length - 1 < count) {
        if (Date.now() > deadline) throw new Error(`expected ${count} prompts, output so far:\n${text}`);
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    },
  };
}

describe("CliApprovalHandler", () => {
  it("prints tool, risk and pretty JSON args, asks the question and reads the answer", async () => {
    const t = terminal();
    const waiting = t.handler.request(makeApprovalRequest({ args: { to: "ceo@example.com" } }), { signal: live() });
    await t.waitForPrompts(1);
    expect(t.text()).toContain("Approval needed: send_email (risk: high)");
    expect(t.text()).toContain('"to": "ceo@example.com"');
    t.input.write("y\n");
    await expect(waiting).resolves.toBe("approved");
    expect(t.text()).toContain("-> approved");
  });

  it.each([
    ["yes\n", "approved"],
    ["s\n", "skipped"],
    ["skip\r\n", "skipped"],
    ["\n", "denied"],
    ["n\n", "denied"],
  ])("turns the answer %j into %s", async (answer, decision) => {
    const t = terminal();
    const waiting = t.handler.request(makeApprovalRequest(), { signal: live() });
    await t.waitForPrompts(1);
    t.input.write(answer);
    await expect(waiting).resolves.toBe(decision);
  });

  it("truncates long arguments to maxArgsChars", async () => {
    const t = terminal(50);
    const waiting = t.handler.request(makeApprovalRequest({ args: { blob: "z".repeat(5000) } }), { signal: live() });
    await t.waitForPrompts(1);
    expect(t.text()).toContain("more characters not shown");
    expect(t.text().length).toBeLessThan(400);
    t.input.write("n\n");
    await waiting;
  });

  it("refuses a maxArgsChars below 1", () => {
    expect(() => new CliApprovalHandler({ maxArgsChars: 0, input: new PassThrough(), output: new PassThrough() })).toThrowError(
      expect.objectContaining({ code: "ARGUMENT_INVALID" }),
    );
  });

  it("shows one prompt at a time, in arrival order", async () => {
    const t = terminal();
    const first = t.handler.request(makeApprovalRequest({ id: "first", tool: "tool_one" }), { signal: live() });
    const second = t.handler.request(makeApprovalRequest({ id: "second", tool: "tool_two" }), { signal: live() });
    await t.waitForPrompts(1);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(t.prompts()).toBe(1);
    expect(t.text()).toContain("tool_one");
    expect(t.text()).not.toContain("tool_two");
    t.input.write("y\n");
    await expect(first).resolves.toBe("approved");
    await t.waitForPrompts(2);
    expect(t.text()).toContain("tool_two");
    t.input.write("s\n");
    await expect(second).resolves.toBe("skipped");
  });

  it("resolves denied when the signal aborts while waiting, says so, and cleans up its listeners", async () => {
    const t = terminal();
    const controller = new AbortController();
    const waiting = t.handler.request(makeApprovalRequest(), { signal: controller.signal });
    await t.waitForPrompts(1);
    expect(t.input.listenerCount("data")).toBeGreaterThan(0);
    controller.abort();
    await expect(waiting).resolves.toBe("denied");
    expect(t.text()).toContain("(no answer in time: denied)");
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    expect(t.input.listenerCount("data")).toBe(0);
    expect(t.input.listenerCount("end")).toBe(0);
  });

  it("releases the input once idle after an answer", async () => {
    const t = terminal();
    const waiting = t.handler.request(makeApprovalRequest(), { signal: live() });
    await t.waitForPrompts(1);
    t.input.write("y\n");
    await waiting;
    expect(t.input.listenerCount("data")).toBe(0);
    expect(t.input.isPaused()).toBe(true);
  });

  it("resolves denied without prompting when the signal is already aborted", async () => {
    const t = terminal();
    await expect(t.handler.request(makeApprovalRequest(), { signal: AbortSignal.abort() })).resolves.toBe("denied");
    expect(t.text()).toBe("");
  });

  it("skips a queued request whose signal aborts before its turn, and goes on with the next", async () => {
    const t = terminal();
    const controller = new AbortController();
    const first = t.handler.request(makeApprovalRequest({ id: "1", tool: "tool_one" }), { signal: live() });
    const second = t.handler.request(makeApprovalRequest({ id: "2", tool: "tool_two" }), { signal: controller.signal });
    const third = t.handler.request(makeApprovalRequest({ id: "3", tool: "tool_three" }), { signal: live() });
    await t.waitForPrompts(1);
    controller.abort();
    await expect(second).resolves.toBe("denied");
    t.input.write("y\n");
    await expect(first).resolves.toBe("approved");
    await t.waitForPrompts(2);
    expect(t.text()).not.toContain("tool_two");
    expect(t.text()).toContain("tool_three");
    t.input.write("n\n");
    await expect(third).resolves.toBe("denied");
  });

  it("does not take lines typed before the prompt as an answer", async () => {
    const t = terminal();
    t.input.write("y\n");
    const waiting = t.handler.request(makeApprovalRequest(), { signal: live() });
    await t.waitForPrompts(1);
    await new Promise((resolve) => setTimeout(resolve, 10));
    t.input.write("n\n");
    await expect(waiting).resolves.toBe("denied");
  });

  it("drops a line that arrives between two prompts instead of answering the second", async () => {
    const t = terminal();
    const first = t.handler.request(makeApprovalRequest({ id: "1" }), { signal: live() });
    const second = t.handler.request(makeApprovalRequest({ id: "2" }), { signal: live() });
    await t.waitForPrompts(1);
    t.input.write("y\ny\n");
    await expect(first).resolves.toBe("approved");
    await t.waitForPrompts(2);
    await new Promise((resolve) => setTimeout(resolve, 10));
    t.input.write("s\n");
    await expect(second).resolves.toBe("skipped");
  });

  it("denies the current and every later request once the input ends", async () => {
    const t = terminal();
    const first = t.handler.request(makeApprovalRequest({ id: "1" }), { signal: live() });
    await t.waitForPrompts(1);
    t.input.end();
    await expect(first).resolves.toBe("denied");
    expect(t.text()).toContain("(input closed: denied)");
    await expect(t.handler.request(makeApprovalRequest({ id: "2" }), { signal: live() })).resolves.toBe("denied");
    expect(t.text()).toContain("input is closed, denied");
  });

  it("denies at once when the input ended while the handler was idle", async () => {
    const t = terminal();
    t.input.end();
    t.input.resume();
    await new Promise((resolve) => setTimeout(resolve, 5));
    await expect(t.handler.request(makeApprovalRequest(), { signal: live() })).resolves.toBe("denied");
  });
});
