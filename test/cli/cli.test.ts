import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const MAIN = resolve("src/cli/main.ts");
const TOOLS = resolve("examples/crm-tools.ts");
const WON_DEALS = resolve("examples/scripts/won-deals-report.ts");
const BROKEN = resolve("examples/scripts/broken.ts");

let cwd: string;

/** Runs `isochain ...args` in the temp cwd, as a user would. */
function isochain(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const child = spawnSync(process.execPath, ["--no-node-snapshot", MAIN, ...args], { cwd, encoding: "utf8", timeout: 60_000 });
  return { code: child.status, stdout: child.stdout, stderr: child.stderr };
}

function savedTraceId(stdout: string): string {
  const match = /trace saved: ([0-9a-f-]{36})/.exec(stdout);
  expect(match, stdout).not.toBeNull();
  return match?.[1] ?? "";
}

beforeAll(() => {
  cwd = mkdtempSync(join(tmpdir(), "isochain-cli-"));
});
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

describe("isochain CLI: run, trace, replay", () => {
  let okId = "";

  it("run executes the example and saves its trace under .isochain/traces", () => {
    const run = isochain("run", WON_DEALS, "--tools", TOOLS, "--approve", "auto");
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("status: ok");
    expect(run.stdout).toMatch(/c3\s+send_email\s+ok/);
    okId = savedTraceId(run.stdout);
    expect(existsSync(join(cwd, ".isochain", "traces", `${okId}.trace`))).toBe(true);
  });

  it("run --no-trace writes no trace", () => {
    const before = readdirSync(join(cwd, ".isochain", "traces")).length;
    const run = isochain("run", WON_DEALS, "--tools", TOOLS, "--approve", "auto", "--no-trace");
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).not.toContain("trace saved");
    expect(readdirSync(join(cwd, ".isochain", "traces"))).toHaveLength(before);
  });

  it("trace ls lists the traces, newest first", () => {
    const ls = isochain("trace", "ls");
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout.split("\n")[0]).toMatch(/^chain\s+created\s+status\s+calls\s+parent$/);
    expect(ls.stdout).toMatch(new RegExp(`${okId}\\s+\\S+\\s+ok\\s+4`));
  });

  it("trace show prints the calls with statuses and timings, and the script", () => {
    const show = isochain("trace", "show", okId.slice(0, 8));
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain(`chain ${okId}`);
    expect(show.stdout).toMatch(/seq\s+callId\s+tool\s+status\s+ms/);
    expect(show.stdout).toMatch(/0\s+c0\s+crm_query\s+ok\s+\d+/);
    expect(show.stdout).toMatch(/3\s+c3\s+send_email\s+ok\s+\d+/);
    expect(show.stdout).toContain('3 | const won = await tools.crm_query({ stage: "won" });');
  });

  it("trace show marks the failing line of a script that threw", () => {
    const run = isochain("run", BROKEN, "--tools", TOOLS, "--approve", "deny");
    expect(run.code).toBe(1);
    const show = isochain("trace", "show", savedTraceId(run.stdout));
    expect(show.stdout).toContain("error [runtime] at line 4");
    expect(show.stdout).toContain("> 4 | return first.notAField.length;");
    expect(show.stdout).toContain("  3 | const first");
  });

  it("replay (strict) needs no tools and reports identical, by id or by file", () => {
    const byId = isochain("replay", okId);
    expect(byId.code, byId.stderr).toBe(0);
    expect(byId.stdout).toContain(`replay of chain ${okId}: identical (4 calls answered from the trace, outcome ok)`);
    const byFile = isochain("replay", join(".isochain", "traces", `${okId}.trace`));
    expect(byFile.code, byFile.stderr).toBe(0);
  });

  it("trace export --test emits a vitest file that replays the trace", () => {
    const out = join(cwd, "pinned.test.ts");
    const exported = isochain("trace", "export", okId, "--test", "--out", out);
    expect(exported.code, exported.stderr).toBe(0);
    const text = readFileSync(out, "utf8");
    expect(text).toContain('from "isochain"');
    expect(text).toContain('replay(trace, { mode: "strict" })');
    expect(text).toContain(`"chainId": "${okId}"`);
    const json = isochain("trace", "export", okId);
    expect(JSON.parse(json.stdout)).toMatchObject({ chainId: okId, calls: [{ callId: "c0" }, {}, {}, {}] });
  });

  it("run --approve suspend suspends at send_email; replay --resume --decision approved finishes it once", () => {
    const run = isochain("run", WON_DEALS, "--tools", TOOLS, "--approve", "suspend");
    expect(run.code).toBe(1);
    expect(run.stdout).toContain("status: suspended");
    expect(run.stdout).toContain("suspended: waiting for approval of send_email (high)");
    const id = savedTraceId(run.stdout);

    const noDecision = isochain("replay", id, "--resume", "--tools", TOOLS);
    expect(noDecision.code).toBe(2);
    expect(noDecision.stderr).toContain("--decision approved|denied|skipped");

    const resumed = isochain("replay", id, "--resume", "--decision", "approved", "--tools", TOOLS);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain(`resumed chain ${id} as `);
    expect(resumed.stdout).toContain("answered from the trace: c0 c1 c2");
    expect(resumed.stdout).toContain("ran live: c3");
    expect(resumed.stdout).toContain('"emailed": true');

    const again = isochain("replay", id, "--resume", "--decision", "approved", "--tools", TOOLS);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("REPLAY_FAILED");
    expect(isochain("trace", "ls").stdout).toMatch(new RegExp(`ok\\s+4\\s+${id}`));
  });

  it("replay --resume of a suspended .trace file moved out of the store resumes that file", () => {
    const run = isochain("run", WON_DEALS, "--tools", TOOLS, "--approve", "suspend");
    expect(run.code).toBe(1);
    const id = savedTraceId(run.stdout);
    const moved = join(cwd, `moved-${id}.trace`);
    renameSync(join(cwd, ".isochain", "traces", `${id}.trace`), moved);
    const resumed = isochain("replay", moved, "--resume", "--decision", "approved", "--tools", TOOLS);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain(`resumed chain ${id} as `);
    expect(resumed.stdout).toContain("ran live: c3");
  });

  it("never writes a control character from a script or trace raw to the terminal", () => {
    const script = join(cwd, "escape.ts");
    writeFileSync(script, 'console.log("\\u001b[2J\\u001b]0;owned\\u0007 cleared");\nreturn "\\u001b[31mred";\n');
    const run = isochain("run", script, "--tools", TOOLS, "--approve", "auto");
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).not.toContain("\u001b");
    expect(run.stdout).toContain("\\u001b[2J");
    const shown = isochain("trace", "show", savedTraceId(run.stdout));
    expect(shown.code).toBe(0);
    expect(shown.stdout).not.toContain("\u001b");
  });

  it("explains usage errors", () => {
    expect(isochain("trace", "nope").code).toBe(2);
    expect(isochain("replay").code).toBe(2);
    const missing = isochain("trace", "show", "zzzz");
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("TRACE_NOT_FOUND");
    for (const bad of ["", "abc", "1.5", "=-1"]) {
      const run = isochain("run", WON_DEALS, "--tools", TOOLS, bad.startsWith("=") ? `--max-calls${bad}` : "--max-calls", ...(bad.startsWith("=") ? [] : [bad]));
      expect(run.code, bad).toBe(2);
      expect(run.stderr).toContain("--max-calls takes a whole number");
    }
    const noScript = isochain("run", "no-such-script.ts", "--tools", TOOLS);
    expect(noScript.code).toBe(2);
    expect(noScript.stderr).toContain("CLI_USAGE: Could not read the script no-such-script.ts: no such file.");
  });
});
