import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { resolveTrace } from "../../src/cli/resolve-trace.ts";
import { FileTraceStore, MAX_SCRIPT_CHARS, type TraceEvent } from "../../src/index.ts";
import { decodeTraceFrames, encodeTraceFrame } from "../../src/trace/trace-frame-codec.ts";
import { chainEndEvent, chainStartEvent, toolCallEvent, toolResultEvent } from "../trace/fixtures/sample-events.ts";

const MAIN = resolve("src/cli/main.ts");
const TOOLS = resolve("examples/crm-tools.ts");
const WON_DEALS = resolve("examples/scripts/won-deals-report.ts");
const BROKEN = resolve("examples/scripts/broken.ts");
const INDEX = resolve("src/index.ts");
/** Bidi controls: each makes a terminal show a line other than what it holds. */
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

let cwd: string;

/** Runs `isochain ...args` in the temp cwd, as a user would. */
function isochain(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  return isochainWithin(60_000, ...args);
}

/** {@link isochain}, killed after `timeoutMs` (then `code` is null): for commands that used to hang. */
function isochainWithin(timeoutMs: number, ...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const child = spawnSync(process.execPath, ["--no-node-snapshot", MAIN, ...args], { cwd, encoding: "utf8", timeout: timeoutMs });
  return { code: child.status, stdout: child.stdout, stderr: child.stderr };
}

/** Runs `isochain ...args` with its stdout pipe closed by the reader before a byte is read (`| head -c0`). */
async function isochainClosedStdout(...args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ["--no-node-snapshot", MAIN, ...args], { cwd, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout.destroy();
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const code = await new Promise<number | null>((done) => child.on("close", (status) => done(status)));
  return { code, stderr };
}

/** Writes `name` in the temp cwd and returns its path. */
function file(name: string, text: string): string {
  const path = join(cwd, name);
  writeFileSync(path, text);
  return path;
}

/** A tool module in the temp cwd: `body` may use `defineTool` and `Toolbox`. */
function toolModule(name: string, body: string): string {
  return file(name, `import { defineTool, Toolbox } from ${JSON.stringify(INDEX)};\nvoid Toolbox;\n${body}\n`);
}

/** Writes `events` as the trace file `path` (folders created), as a hand-made or damaged trace would be. */
function traceFile(path: string, events: readonly object[]): string {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, Buffer.concat(events.map((event) => encodeTraceFrame(event as TraceEvent))));
  return path;
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

  it("bench runs the benchmark suite with its options, and says when a command is none", () => {
    const listed = isochain("bench", "--list");
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^chain +isochain\/one-call /m);
    const wrong = isochain("bench", "--bogus");
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain("Unknown option '--bogus'");
    const none = isochain("benchmark");
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('unknown command "benchmark"');
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

  it("run --approve deny denies as an approver would: the script reads that the approver said no, not that none was configured", () => {
    const run = isochain("run", WON_DEALS, "--tools", TOOLS, "--approve", "deny");
    expect(run.code, run.stderr).toBe(0);
    const trace = JSON.parse(isochain("trace", "export", savedTraceId(run.stdout)).stdout) as {
      calls: { tool: string; result?: { code?: string; text?: string } }[];
    };
    const send = trace.calls.find((call) => call.tool === "send_email");
    expect(send?.result).toMatchObject({ code: "APPROVAL_DENIED", text: expect.stringContaining("was denied by the approver") });
  });

  it("trace show marks the failing line of a script that threw", () => {
    const run = isochain("run", BROKEN, "--tools", TOOLS, "--approve", "deny");
    expect(run.code).toBe(1);
    // It returned nothing: no "return value: undefined" section, which would read as a value.
    expect(run.stdout).not.toContain("return value:");
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

  it("replay of a trace exported as JSON, named bare or by path, says what it is and what to pass instead", () => {
    const run = isochain("run", WON_DEALS, "--tools", TOOLS, "--approve", "auto");
    const id = savedTraceId(run.stdout);
    expect(isochain("trace", "export", id, "--out", "export.json").code).toBe(0);
    for (const ref of ["export.json", "./export.json"]) {
      const replayed = isochain("replay", ref);
      expect(replayed.code, ref).toBe(2);
      expect(replayed.stderr).toContain(`TRACE_INVALID: ${ref} is a trace exported as JSON (by \`isochain trace export\`), not a trace log`);
      expect(replayed.stderr).toContain(`Pass the chain id (${id})`);
    }
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
    expect(run.code).toBe(3);
    expect(run.stdout).toContain("status: suspended");
    expect(run.stdout).toContain("suspended: waiting for approval of send_email (high)");
    const id = savedTraceId(run.stdout);

    const noDecision = isochain("replay", id, "--resume", "--tools", TOOLS);
    expect(noDecision.code).toBe(2);
    expect(noDecision.stderr).toContain("--decision approved|denied|skipped");
    const badDecision = isochain("replay", id, "--resume", "--decision", "maybe", "--tools", TOOLS);
    expect(badDecision.code).toBe(2);
    expect(badDecision.stderr).toContain('CLI_USAGE: --decision must be approved, denied or skipped; got "maybe".');

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
    expect(run.code).toBe(3);
    const id = savedTraceId(run.stdout);
    const moved = join(cwd, `moved-${id}.trace`);
    renameSync(join(cwd, ".isochain", "traces", `${id}.trace`), moved);
    const resumed = isochain("replay", moved, "--resume", "--decision", "approved", "--tools", TOOLS);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain(`resumed chain ${id} as `);
    expect(resumed.stdout).toContain("ran live: c3");
  });

  it("replay --resume of a store's .trace file under another --store claims it in its own folder too: it is not resumed twice", () => {
    const run = isochain("run", WON_DEALS, "--tools", TOOLS, "--approve", "suspend", "--store", "store-a");
    expect(run.code).toBe(3);
    const id = savedTraceId(run.stdout);
    const path = join(cwd, "store-a", "traces", `${id}.trace`);
    const elsewhere = isochain("replay", path, "--resume", "--decision", "approved", "--tools", TOOLS, "--store", "store-b");
    expect(elsewhere.code, elsewhere.stderr).toBe(0);
    expect(elsewhere.stdout).toContain("ran live: c3");
    for (const store of ["store-a", "store-c"]) {
      const again = isochain("replay", path, "--resume", "--decision", "approved", "--tools", TOOLS, "--store", store);
      expect(again.code, store).toBe(2);
      expect(again.stderr).toMatch(new RegExp(`REPLAY_FAILED: Chain ${id} (was already resumed|is being resumed) as chain`));
    }
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

describe("isochain CLI: a closed output", () => {
  it("ends quietly with the exit code the command would have had (run, run --json, trace show --json)", async () => {
    // Over a pipe's 64 KiB: console output and a long return value.
    const big = file("big.ts", 'for (let i = 0; i < 2000; i++) console.log("line " + i + " " + "x".repeat(40));\nreturn "done";\n');
    const traced = isochain("run", big, "--tools", TOOLS, "--approve", "auto");
    expect(traced.code, traced.stderr).toBe(0);
    const id = savedTraceId(traced.stdout);
    const cases: [string[], number][] = [
      [["run", big, "--tools", TOOLS, "--approve", "auto"], 0],
      [["run", big, "--tools", TOOLS, "--approve", "auto", "--json"], 0],
      [["trace", "show", id, "--json"], 0],
      [["trace", "show", id], 0],
      [["run", BROKEN, "--tools", TOOLS, "--approve", "deny"], 1],
      [["run", WON_DEALS, "--tools", TOOLS, "--approve", "suspend"], 3],
    ];
    for (const [args, code] of cases) {
      const closed = await isochainClosedStdout(...args);
      expect(closed.stderr, args.join(" ")).toBe("");
      expect(closed.code, args.join(" ")).toBe(code);
    }
  });
});

describe("isochain CLI: bidi controls never reach the terminal raw", () => {
  const SPOOF = "\\u202eevil\\u202c \\u2066iso\\u2069 \\u200e\\u200f\\u061c";

  it("in run output, console output, errors, trace show and the suspended line a human approves from", () => {
    const tools = toolModule(
      "spoof-tools.ts",
      `export const send = defineTool({ name: "send", description: "high", risk: "high", inputSchema: { type: "object", properties: { to: { type: "string" } } }, execute: async () => ({ sent: true }) });
export const shout = defineTool({ name: "shout", description: "fails", inputSchema: { type: "object" }, execute: async () => { throw new Error("tool says ${SPOOF}"); } });`,
    );
    const failing = file("spoof-fail.ts", `console.log("log ${SPOOF}");\nawait tools.shout({});\nthrow new Error("script ${SPOOF}");\n`);
    const run = isochain("run", failing, "--tools", tools, "--approve", "auto");
    expect(run.code, run.stderr).toBe(1);
    expect(run.stdout).not.toMatch(BIDI);
    expect(run.stdout).toContain("log \\u202eevil\\u202c \\u2066iso\\u2069 \\u200e\\u200f\\u061c");
    expect(run.stdout).toContain("script \\u202eevil");
    const shown = isochain("trace", "show", savedTraceId(run.stdout));
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain("\\u202e");
    expect(shown.stdout).not.toMatch(BIDI);

    const suspending = file("spoof-suspend.ts", `return await tools.send({ to: "bob ${SPOOF}" });\n`);
    const suspended = isochain("run", suspending, "--tools", tools, "--approve", "suspend");
    expect(suspended.code, suspended.stderr).toBe(3);
    expect(suspended.stdout).toContain('suspended: waiting for approval of send (high) with {"to":"bob \\u202eevil\\u202c \\u2066iso\\u2069 \\u200e\\u200f\\u061c"}');
    expect(suspended.stdout).not.toMatch(BIDI);
    const json = isochain("run", suspending, "--tools", tools, "--approve", "suspend", "--json");
    expect(json.stdout).not.toMatch(BIDI);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: "suspended", pendingApproval: { args: { to: `bob ${JSON.parse(`"${SPOOF}"`)}` } } });
  });

  it("in errors on stderr", () => {
    const throwing = file("spoof-module.ts", `throw new Error("module ${SPOOF}");\n`);
    const run = isochain("run", WON_DEALS, "--tools", throwing);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("module \\u202eevil");
    expect(run.stderr).not.toMatch(BIDI);
  });
});

describe("isochain CLI: the script and tool module must be regular files", () => {
  it("refuses a FIFO as the script or the tool module at once instead of waiting for a writer", () => {
    const fifo = join(cwd, "fifo.ts");
    expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
    try {
      const script = isochainWithin(20_000, "run", fifo, "--tools", TOOLS);
      expect(script.code, "run <fifo> hung").toBe(2);
      expect(script.stderr).toContain(`CLI_USAGE: Could not read the script ${fifo}: it is a FIFO (named pipe), not a regular file`);
      const tools = isochainWithin(20_000, "run", WON_DEALS, "--tools", fifo);
      expect(tools.code, "--tools <fifo> hung").toBe(2);
      expect(tools.stderr).toContain(`CLI_USAGE: Could not load the tool module ${fifo}: it is a FIFO (named pipe), not a regular file`);
    } finally {
      rmSync(fifo, { force: true });
    }
  });

  it("refuses /dev/zero and a folder unread", () => {
    const zero = isochainWithin(20_000, "run", "/dev/zero", "--tools", TOOLS);
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain("CLI_USAGE: Could not read the script /dev/zero: it is a character device, not a regular file");
    const folder = isochain("run", tmpdir(), "--tools", TOOLS);
    expect(folder.code).toBe(2);
    expect(folder.stderr).toContain("it is a folder, not a regular file");
  });

  it("refuses a script that is not UTF-8, naming where, instead of handing tools U+FFFD", () => {
    const latin1 = join(cwd, "latin1.ts");
    writeFileSync(latin1, Buffer.from('// ok\nreturn "Jos\xe9";\n', "latin1"));
    const run = isochain("run", latin1, "--tools", TOOLS);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`isochain: CLI_USAGE: Could not read the script ${latin1}: it is not UTF-8 text (line 2, column 12 is not a UTF-8 character); save it as UTF-8.\n`);
    rmSync(latin1);
  });

  it("refuses a script over 4 bytes per character of the script limit before reading it", () => {
    const huge = file("huge.ts", `// ${"x".repeat(4 * MAX_SCRIPT_CHARS)}\nreturn 1;\n`);
    const run = isochain("run", huge, "--tools", TOOLS);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`CLI_USAGE: Could not read the script ${huge}: it is ${4 * MAX_SCRIPT_CHARS + 14} bytes, and scripts are compiled up to ${MAX_SCRIPT_CHARS} characters`);
    rmSync(huge);
  });
});

describe("isochain CLI: the store", () => {
  it("refuses a --store that cannot hold one before anything runs (exit 2, no call refused mid-run)", () => {
    const notAFolder = file("store-file.txt", "a file\n");
    const run = isochain("run", WON_DEALS, "--tools", TOOLS, "--approve", "auto", "--store", notAFolder);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain(`CLI_USAGE: The store ${notAFolder} cannot be used: a part of ${join(notAFolder, "blobs")} is a file, not a folder. Pass a folder`);
  });

  it.runIf(process.platform === "linux" && existsSync("/proc/self"))("refuses a --store where no folder can be made (under /proc), not waiting on it for good", () => {
    // Node's recursive mkdir loops forever there (see src/kernel/make-directory.ts).
    const run = isochainWithin(60_000, "run", WON_DEALS, "--tools", TOOLS, "--approve", "auto", "--store", "/proc/isochain-store");
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain("CLI_USAGE: The store /proc/isochain-store cannot be used: /proc/isochain-store cannot be created: the file system there refuses new folders.");
  });

  it("creates a missing store folder", () => {
    const store = join(cwd, "new", "store");
    const run = isochain("run", WON_DEALS, "--tools", TOOLS, "--approve", "auto", "--store", store);
    expect(run.code, run.stderr).toBe(0);
    expect(readdirSync(join(store, "traces")).some((name) => name.endsWith(".trace"))).toBe(true);
  });

  it("exits 1 when the trace fails mid-run, even if the script ends ok", () => {
    // A tool that makes every later fsync fail, as a failing disk would.
    const tools = toolModule(
      "failing-disk.ts",
      `import { open } from "node:fs/promises";
export const break_disk = defineTool({ name: "break_disk", description: "x", inputSchema: { type: "object" }, execute: async () => {
  const handle = await open(import.meta.filename, "r");
  const prototype = Object.getPrototypeOf(handle);
  await handle.close();
  prototype.datasync = () => Promise.reject(Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" }));
  return { broken: true };
} });
export const echo = defineTool({ name: "echo", description: "x", inputSchema: { type: "object" }, execute: async () => ({ ok: true }) });`,
    );
    const script = file("after-disk.ts", "await tools.break_disk({});\nconst echoed = await tools.echo({});\nreturn echoed.status;\n");
    const run = isochain("run", script, "--tools", tools, "--approve", "auto");
    expect(run.stdout).toContain("status: ok");
    expect(run.stdout).not.toContain("trace saved");
    expect(run.stderr).toContain("isochain: the trace is incomplete (STORE_FAILED:");
    expect(run.code).toBe(1);
  });
});

describe("isochain CLI: tool modules", () => {
  const load = (name: string, body: string): { code: number | null; stderr: string } => {
    const run = isochain("run", WON_DEALS, "--tools", toolModule(name, body), "--approve", "auto");
    return { code: run.code, stderr: run.stderr };
  };

  it("describe a module that throws a non-Error at import", () => {
    for (const [name, thrown, said] of [
      ["throws-null.ts", "null", "it threw null, not an Error"],
      ["throws-42.ts", "42", "it threw 42, not an Error"],
      ["throws-object.ts", '{ toString() { throw new Error("nested"); } }', "it threw {}, not an Error"],
    ]) {
      const run = load(name as string, `throw ${thrown};`);
      expect(run.code, name).toBe(2);
      expect(run.stderr).toBe(`isochain: CLI_USAGE: Could not load the tool module ${join(cwd, name as string)}: ${said}\n`);
    }
  });

  it("name a module whose top-level await never settles, exit 2 (run and replay --resume), instead of a silent exit 0", () => {
    const hang = toolModule("never-loads.ts", "await new Promise(() => {});\nexport const a = 1;");
    const said = `isochain: CLI_USAGE: Could not load the tool module ${hang}: it never finished loading (its top-level await did not settle). Make every top-level await in it settle, or move the waiting into a tool's execute.\n`;
    const run = isochainWithin(20_000, "run", WON_DEALS, "--tools", hang, "--approve", "auto");
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toBe(said);
    const suspended = isochain("run", WON_DEALS, "--tools", TOOLS, "--approve", "suspend");
    expect(suspended.code, suspended.stderr).toBe(3);
    const resume = isochainWithin(20_000, "replay", savedTraceId(suspended.stdout), "--resume", "--decision", "approved", "--tools", hang);
    expect(resume.code, resume.stderr).toBe(2);
    expect(resume.stderr).toBe(said);
  }, 90_000);

  it("refuse exports that trap when read, naming the module", () => {
    const proxy = load("proxy.ts", 'export default new Proxy({}, { get() { throw new Error("proxy get trap"); }, getPrototypeOf() { throw new Error("proto trap"); } });');
    expect(proxy.code).toBe(2);
    expect(proxy.stderr).toContain(`isochain: CLI_USAGE: Could not read the tools the module ${join(cwd, "proxy.ts")} exports: proto trap.`);
    const getter = load("getter.ts", 'export const tools = [{ get name() { throw new Error("getter boom"); }, description: "x", inputSchema: { type: "object" }, execute() {} }];');
    expect(getter.code).toBe(2);
    expect(getter.stderr).toContain(`isochain: CLI_USAGE: Could not read the tools the module ${join(cwd, "getter.ts")} exports: getter boom.`);
    const nonError = load("proxy-null.ts", "export default new Proxy([], { getPrototypeOf() { throw null; } });");
    expect(nonError.code).toBe(2);
    expect(nonError.stderr).toContain("exports: it threw null, not an Error.");
  });

  it("take the tools of every Toolbox and array of tools exported by name, as the help says", () => {
    const tool = (name: string): string => `defineTool({ name: "${name}", description: "d", inputSchema: { type: "object" }, execute: () => "${name}" })`;
    const script = file("both.ts", "return [(await tools.hi({})).text, (await tools.yo({})).text, (await tools.solo({})).text];\n");
    const module = toolModule("boxes.ts", `export const box = new Toolbox([${tool("hi")}]);\nexport const list = [${tool("yo")}];\nexport const solo = ${tool("solo")};`);
    const run = isochain("run", script, "--tools", module, "--approve", "auto", "--json");
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.stdout) as { returnValue: unknown }).returnValue).toEqual(["hi", "yo", "solo"]);
    const clash = load("clash.ts", `export const box = new Toolbox([${tool("hi")}]);\nexport const other = ${tool("hi")};`);
    expect(clash.code).toBe(2);
    expect(clash.stderr).toContain('has two tools named "hi": export box (a Toolbox) and export other.');
  });

  it("refuse two different tools with one name, naming both; the same tool exported twice is one", () => {
    const tool = (description: string): string => `defineTool({ name: "echo", description: "${description}", inputSchema: { type: "object" }, execute: () => 1 })`;
    const named = load("dupe.ts", `export const first = ${tool("a")};\nexport const second = ${tool("b")};`);
    expect(named.code).toBe(2);
    expect(named.stderr).toContain(`CLI_USAGE: The module ${join(cwd, "dupe.ts")} has two tools named "echo": export first and export second.`);
    const array = load("dupe-array.ts", `export default [${tool("a")}, ${tool("b")}];`);
    expect(array.code).toBe(2);
    expect(array.stderr).toContain('has two tools named "echo": default[0] and default[1].');
    const same = isochain("run", file("echo.ts", "return (await tools.echo({})).status;\n"), "--tools", toolModule("same.ts", `export const first = ${tool("a")};\nexport { first as second };`));
    expect(same.code, same.stderr).toBe(0);
  });

  it("report a module's own stray errors and go on: the run ends with its code, its trace whole", () => {
    const stray = toolModule(
      "stray.ts",
      [
        'Promise.reject(new Error("at import"));',
        "export const ping = defineTool({ name: \"ping\", description: \"p\", inputSchema: { type: \"object\" }, execute: async () => {",
        '  Promise.reject(new Error("left by execute"));',
        '  setTimeout(() => { throw new Error("from a timer"); }, 1);',
        "  return { pong: true };",
        "} });",
      ].join("\n"),
    );
    const store = join(cwd, "stray-store");
    const run = isochain("run", file("ping.ts", 'const r = await tools.ping({});\nawait tools.ping({});\nreturn r.status;\n'), "--tools", stray, "--store", store);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(`isochain: warning: the tool module left a promise rejection unhandled: at import (at ${stray}:3:16). The command goes on; catch it where the promise is made (.catch, or await it).`);
    expect(run.stderr).toContain(`isochain: warning: the tool module left a promise rejection unhandled: left by execute (at ${stray}:5:18).`);
    expect(run.stderr).toContain(`isochain: warning: the tool module threw outside any tool call (a timer or event of its own): from a timer (at ${stray}:6:28). The command goes on; catch it in that callback.`);
    expect(run.stderr).not.toMatch(/Node\.js v|^\s+at /m);
    expect(run.stdout).toContain("status: ok");
    const files = readdirSync(join(store, "traces"));
    expect(files.filter((name) => name.endsWith(".trace"))).toHaveLength(1);
    expect(files.filter((name) => name.endsWith(".live"))).toEqual([]);
    const shown = isochain("trace", "show", savedTraceId(run.stdout), "--store", store);
    expect(shown.code, shown.stderr).toBe(0);

    const rejectedDefault = load("rejected-default.ts", 'export default Promise.reject(new Error("no toolbox"));');
    expect(rejectedDefault.code).toBe(2);
    expect(rejectedDefault.stderr).toContain("exports no tools");
    expect(rejectedDefault.stderr).toContain("isochain: warning: the tool module left a promise rejection unhandled: no toolbox");
  }, 60_000);

  it("refuse an empty toolbox however it is exported", () => {
    for (const [name, body] of [
      ["empty.ts", "export {};"],
      ["empty-array.ts", "export default [];"],
      ["empty-tools.ts", "export const tools = [];"],
      ["empty-toolbox.ts", "export default new Toolbox();"],
    ]) {
      const run = load(name as string, body as string);
      expect(run.code, name).toBe(2);
      expect(run.stderr, name).toMatch(/^isochain: CLI_USAGE: The module \S+ exports (no tools|an empty toolbox)/);
    }
  });
});

describe("isochain CLI: numeric options", () => {
  it("take decimal digits in a stated range, else CLI_USAGE", () => {
    for (const bad of ["", "0", "0x2", "1e1", "abc", "-1", "+1", " 2", "1.0", "99999999999999999999"]) {
      const ls = isochain("trace", "ls", `--limit=${bad}`);
      expect(ls.code, bad).toBe(2);
      expect(ls.stderr, bad).toBe(`isochain: CLI_USAGE: --limit takes a whole number of traces from 1 to 1000000, in decimal digits (e.g. --limit 20); got ${JSON.stringify(bad)}.\n`);
    }
    const one = isochain("trace", "ls", "--limit", "1");
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout.trim().split("\n")).toHaveLength(2);
    for (const bad of ["99999999999999999999", "1000001", "0x10", "1e3"]) {
      const run = isochain("run", WON_DEALS, "--tools", TOOLS, "--max-calls", bad);
      expect(run.code, bad).toBe(2);
      expect(run.stderr).toContain(`CLI_USAGE: --max-calls takes a whole number of tool calls from 0 to 1000000, in decimal digits (e.g. --max-calls 50); got ${JSON.stringify(bad)}.`);
    }
  }, 90_000);

  it("say the same of a negative number given as the next argument, not parseArgs' \"argument is ambiguous\"", () => {
    for (const [args, said] of [
      [["trace", "ls", "--limit", "-1"], 'CLI_USAGE: --limit takes a whole number of traces from 1 to 1000000, in decimal digits (e.g. --limit 20); got "-1".'],
      [["run", WON_DEALS, "--tools", TOOLS, "--max-calls", "-1"], 'CLI_USAGE: --max-calls takes a whole number of tool calls from 0 to 1000000, in decimal digits (e.g. --max-calls 50); got "-1".'],
      [["run", WON_DEALS, "--max-calls", "-0.5", "--tools", TOOLS], 'CLI_USAGE: --max-calls takes a whole number of tool calls from 0 to 1000000, in decimal digits (e.g. --max-calls 50); got "-0.5".'],
    ] as const) {
      const negative = isochain(...args);
      expect(negative.code, args.join(" ")).toBe(2);
      expect(negative.stderr, args.join(" ")).toBe(`isochain: ${said}\n`);
    }
    const forgotten = isochain("run", WON_DEALS, "--tools", "--json");
    expect(forgotten.code).toBe(2);
    expect(forgotten.stderr).toContain("argument is ambiguous");
  });
});

describe("isochain CLI: exit codes and stray arguments", () => {
  it("the usage text states the exit codes, suspended its own", () => {
    const help = isochain("--help");
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Exit codes:\n {2}0 {2}done.*\n {2}1 {2}the chain ended in error.*\n {2}2 {2}could not do what was asked[^]*\n {2}3 {2}the chain is suspended/);
  });

  it("names an unknown option and the one it is close to", () => {
    const run = isochain("run", WON_DEALS, "--tools", TOOLS, "--maxcalls", "3");
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("CLI_USAGE: isochain run: unknown option --maxcalls; did you mean --max-calls? (options: ");
    expect(isochain("trace", "ls", "--limt", "2").stderr).toContain("unknown option --limt; did you mean --limit?");
    // A flag on by default is named as it is written.
    const noTrace = isochain("run", WON_DEALS, "--tools", TOOLS, "--no-trcae");
    expect(noTrace.stderr).toContain("unknown option --no-trcae; did you mean --no-trace?");
    expect(noTrace.stderr).not.toMatch(/[ (]--trace[,)]/);
  });

  it("refuses extra positional arguments", () => {
    const run = isochain("run", WON_DEALS, BROKEN, "--tools", TOOLS, "--approve", "auto");
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain(`CLI_USAGE: isochain run takes one script; got 1 more: ${JSON.stringify(BROKEN)}.`);
    expect(isochain("trace", "ls", "extra").stderr).toContain("CLI_USAGE: isochain trace ls takes no arguments besides its options; got 1 more");
    expect(isochain("trace", "show", "a", "b").stderr).toContain('CLI_USAGE: isochain trace show takes one chain id or .trace file; got 1 more: "b".');
    expect(isochain("replay", "a", "b").stderr).toContain('CLI_USAGE: isochain replay takes one chain id or .trace file; got 1 more: "b".');
  });

  it("strict replay refuses the options only a resume reads; --in-doubt is checked whole", () => {
    const run = isochain("run", WON_DEALS, "--tools", TOOLS, "--approve", "auto");
    const id = savedTraceId(run.stdout);
    for (const extra of [["--decision", "approved"], ["--in-doubt", "c1=assume-done"], ["--approve", "auto"], ["--force"]]) {
      const strict = isochain("replay", id, ...extra);
      expect(strict.code, extra.join(" ")).toBe(2);
      expect(strict.stderr).toContain(`CLI_USAGE: ${extra[0]} applies to a resume; a strict replay runs no call live and decides nothing.`);
    }
    for (const bad of ["c9=assume-done=zzz", "c9", "=assume-done", "c9=maybe"]) {
      const resume = isochain("replay", id, "--resume", "--tools", TOOLS, "--in-doubt", bad);
      expect(resume.code, bad).toBe(2);
      expect(resume.stderr).toContain(`CLI_USAGE: --in-doubt takes <callId>=assume-done|re-execute (e.g. c2=assume-done); got "${bad}".`);
    }
    const twice = isochain("replay", id, "--resume", "--tools", TOOLS, "--in-doubt", "c1=assume-done", "--in-doubt", "c1=re-execute");
    expect(twice.stderr).toContain("CLI_USAGE: --in-doubt decides c1 twice");
    const noSuchCall = isochain("replay", id, "--resume", "--tools", TOOLS, "--in-doubt", "c9=assume-done");
    expect(noSuchCall.code).toBe(2);
    expect(noSuchCall.stderr).toBe(
      `isochain: CLI_USAGE: --in-doubt c9: chain ${id} has no in-doubt call c9; it has none. Decide only the calls \`isochain trace show ${id}\` lists as in doubt.\n`,
    );
  });
});

describe("isochain CLI: --out", () => {
  it("says, naming the path, why a file cannot be written: a folder, a path through a file, an empty path (exit 2)", () => {
    const run = isochain("run", WON_DEALS, "--tools", TOOLS, "--approve", "auto");
    const id = savedTraceId(run.stdout);
    const folder = join(cwd, "out-folder");
    mkdirSync(folder, { recursive: true });
    const aFile = file("out-file.txt", "a file\n");
    const advice = "Pass the path of a file to write (a missing folder is created), or leave out --out to print to stdout.";
    for (const [args, reason] of [
      [["trace", "show", id, "--out", folder], `Could not write --out ${folder}: it is a folder.`],
      [["trace", "export", id, "--test", "--out", folder], `Could not write --out ${folder}: it is a folder.`],
      [["trace", "show", id, "--json", "--out", join(aFile, "x", "trace.json")], `Could not write --out ${join(aFile, "x", "trace.json")}: a part of ${join(aFile, "x")} is a file, not a folder.`],
      [["trace", "export", id, "--out", join(aFile, "trace.json")], `Could not write --out ${join(aFile, "trace.json")}: ${aFile} is a file, not a folder.`],
      [["trace", "show", id, "--out="], 'Could not write --out "": the path is empty.'],
    ] as const) {
      const written = isochain(...args);
      expect(written.code, args.join(" ")).toBe(2);
      expect(written.stdout, args.join(" ")).toBe("");
      expect(written.stderr, args.join(" ")).toBe(`isochain: CLI_USAGE: ${reason} ${advice}\n`);
    }
    // Never over the store's own files, nor the trace file read: written over, the trace is gone.
    const store = join(cwd, ".isochain");
    const log = join(store, "traces", `${id}.trace`);
    const copy = join(cwd, "copied.trace");
    writeFileSync(copy, readFileSync(log));
    const storeAdvice = "whose files are its data (traces, artifacts), which the output would replace.";
    for (const [args, reason] of [
      [["trace", "export", id, "--out", log], `Could not write --out ${log}: it is in the store's folder ${join(".isochain", "traces")}, ${storeAdvice}`],
      [["trace", "show", id, "--out", join(store, "traces", "notes.txt")], `it is in the store's folder ${join(".isochain", "traces")}, ${storeAdvice}`],
      [["trace", "show", id, "--out", join(store, "blobs", "x", "y")], `it is in the store's folder ${join(".isochain", "blobs")}, ${storeAdvice}`],
      [["trace", "export", copy, "--out", join(cwd, ".", "copied.trace")], "it is the trace file being read, which the output would replace."],
    ] as const) {
      const refused = isochain(...args);
      expect(refused.code, args.join(" ")).toBe(2);
      expect(refused.stderr, args.join(" ")).toContain(reason);
    }
    // Nor through a link to a file of the store not written yet.
    const link = join(cwd, "out-link.json");
    symlinkSync(join(store, "traces", "not-yet.trace"), link);
    const linked = isochain("trace", "export", id, "--out", link);
    expect(linked.code).toBe(2);
    expect(linked.stderr).toContain(`it is in the store's folder ${join(".isochain", "traces")}`);
    expect(existsSync(join(store, "traces", "not-yet.trace"))).toBe(false);
    expect(readFileSync(log)).toEqual(readFileSync(copy));
    expect(isochain("replay", id).code).toBe(0);
    const nested = join(cwd, "new-out", "deeper", "trace.txt");
    const ok = isochain("trace", "show", id, "--out", nested);
    expect(ok.code, ok.stderr).toBe(0);
    expect(readFileSync(nested, "utf8")).toContain(`chain ${id}`);
  }, 90_000);
});

describe("isochain CLI: a strict replay whose script fails", () => {
  /**
   * A trace of `original` (which runs ok) whose recorded script is then edited, in the file, to
   * `edited` (padded to the same length, so the frame stays whole), as a hand-edited trace would be.
   */
  function editedTrace(name: string, original: string, edited: string): string {
    const run = isochain("run", file(`${name}.ts`, original), "--tools", TOOLS, "--approve", "auto");
    expect(run.code, run.stderr).toBe(0);
    const path = join(cwd, ".isochain", "traces", `${savedTraceId(run.stdout)}.trace`);
    const bytes = readFileSync(path);
    const at = bytes.indexOf(original);
    expect(at).toBeGreaterThan(0);
    expect(bytes.indexOf(original, at + 1)).toBe(-1);
    const replacement = Buffer.from(edited.padEnd(original.length, " "));
    expect(replacement.length).toBe(Buffer.byteLength(original));
    replacement.copy(bytes, at);
    const edit = join(cwd, `${name}.trace`);
    writeFileSync(edit, bytes);
    return edit;
  }
  const ORIGINAL = `const won = await tools.crm_query({ stage: "won" });\nreturn won.status;${" ".repeat(40)}\n`;

  it("says the script's error with the divergence, on one bounded line", () => {
    // A call the script never made: the divergence's own message ends with why.
    const runtime = isochain("replay", editedTrace("replay-throws", ORIGINAL, "const won = undefined as any;\nreturn won.status;"));
    expect(runtime.code, runtime.stderr).toBe(1);
    expect(runtime.stdout).toMatch(
      /: DIVERGED \(missing-call at c0\)\n.*never made it: it failed first \(runtime error at 2:\d+\) with TypeError: Cannot read properties of undefined \(reading 'status'\)\.\n$/,
    );

    const compile = isochain("replay", editedTrace("replay-syntax", ORIGINAL, "const won = ;"));
    expect(compile.code, compile.stderr).toBe(1);
    expect(compile.stdout).toMatch(/never made it: it failed first \(compile error at 1:\d+\) with SyntaxError: .+\n$/);

    const long = isochain("replay", editedTrace("replay-long", ORIGINAL.replace("return", `${"\n".repeat(3)}return`), 'throw new Error("a\\nb " + "x".repeat(5000));'));
    expect(long.code, long.stderr).toBe(1);
    const line = long.stdout.split("\n").find((text) => text.includes("failed first"));
    expect(line).toMatch(/failed first \(runtime error at 1:\d+\) with Error: a b x+…$/);
    expect(Array.from(line ?? "").length).toBeLessThan(500);

    // Every call made, then a throw: the outcome differs, and a line of its own says why.
    const late = isochain("replay", editedTrace("replay-late", ORIGINAL, 'const won = await tools.crm_query({ stage: "won" });\nthrow new Error("late");'));
    expect(late.code, late.stderr).toBe(1);
    expect(late.stdout).toMatch(/: DIVERGED \(outcome-mismatch\)[^]*\nthe replayed script failed \[runtime\] at line 2, column \d+: Error: late\n$/);
  }, 90_000);
});

describe("isochain CLI: a strict replay of a trace with no end", () => {
  const SCRIPT = 'const first = await tools.crm_query({ stage: "won", limit: 1 });\nconst second = await tools.crm_query({ stage: "lost", limit: 1 });\nreturn [first.status, second.status];\n';
  const frames: { event: TraceEvent; end: number }[] = [];
  let bytes = Buffer.alloc(0);
  let id = "";

  /** A copy of the recorded trace cut just after the frame `isLast` finds: what a crash there leaves. */
  function cutAfter(name: string, isLast: (event: TraceEvent) => boolean): string {
    const frame = frames.find(({ event }) => isLast(event));
    expect(frame, name).toBeDefined();
    const path = join(cwd, `${name}.trace`);
    writeFileSync(path, bytes.subarray(0, frame?.end));
    return path;
  }

  beforeAll(() => {
    const run = isochain("run", file("two-queries.ts", SCRIPT), "--tools", TOOLS);
    expect(run.code, run.stderr).toBe(0);
    id = savedTraceId(run.stdout);
    bytes = readFileSync(join(cwd, ".isochain", "traces", `${id}.trace`));
    // Frame by frame (4-byte big-endian length, then the msgpack payload), each decoded on its own.
    for (let offset = 0; offset < bytes.length; ) {
      const end = offset + 4 + bytes.readUInt32BE(offset);
      const [event] = decodeTraceFrames(bytes.subarray(offset, end)).events;
      if (event !== undefined) frames.push({ event, end });
      offset = end;
    }
  }, 60_000);

  it("cut between calls: says no call is in doubt and where the replay stopped", () => {
    const path = cutAfter("between-calls", (event) => event.type === "tool-result" && event.callId === "c0");
    const replayed = isochain("replay", path);
    expect(replayed.code, replayed.stderr).toBe(0);
    // The replay's own stop is not the chain's outcome: none is printed.
    expect(replayed.stdout).toMatch(new RegExp(`^replay of chain ${id}: identical \\(1 call answered from the trace\\)\n`));
    expect(replayed.stdout).toContain(
      "note: the trace has no outcome and ends before c1 (the chain died between calls: no call is in doubt); the replay stopped when the script made c1.\n",
    );
    expect(replayed.stdout).not.toContain("in doubt at");
  });

  it("cut inside a call: says that call is in doubt, the chain having died there", () => {
    const path = cutAfter("in-doubt", (event) => event.type === "tool-call" && event.callId === "c1");
    const replayed = isochain("replay", path);
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(replayed.stdout).toMatch(/: identical \(1 call answered from the trace\)\n/);
    expect(replayed.stdout).toContain("note: the trace ends in doubt at c1 (the chain died there); the replay stopped there too.\n");
  });

  it("suspended: says the call in doubt is the one the chain was suspended at", () => {
    const run = isochain("run", WON_DEALS, "--tools", TOOLS, "--approve", "suspend");
    expect(run.code).toBe(3);
    const replayed = isochain("replay", savedTraceId(run.stdout));
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(replayed.stdout).toContain("note: the trace ends in doubt at c3 (the chain was suspended there); the replay stopped there too.\n");
  });
});

describe("isochain CLI: traces that cannot be read", () => {
  const store = (): string => mkdtempSync(join(cwd, "damaged-store-"));
  const damaged = (dir: string, id: string): string => {
    const path = join(dir, "traces", `${id}.trace`);
    traceFile(path, [chainStartEvent(id), chainEndEvent({ outputText: 5 as never })]);
    return path;
  };

  it("trace show and replay of a damaged trace in the store say why it cannot be read, by id or by prefix, not TRACE_NOT_FOUND", () => {
    const dir = store();
    const id = "0123abcd-damaged";
    const path = damaged(dir, id);
    const said = `isochain: TRACE_INVALID: ${path}: Trace event 1 (chain-end) has a malformed "outputText".\n`;
    for (const args of [["trace", "show", id], ["trace", "show", id.slice(0, 8)], ["replay", id], ["trace", "export", id.slice(0, 8)]]) {
      const shown = isochain(...args, "--store", dir);
      expect(shown.code, args.join(" ")).toBe(2);
      expect(shown.stderr, args.join(" ")).toBe(said);
    }
  });

  it("trace ls lists the readable traces and says, on stderr, which files it could not read and why", () => {
    const dir = store();
    const path = damaged(dir, "broken-one");
    traceFile(join(dir, "traces", "fine.trace"), [chainStartEvent("fine"), chainEndEvent()]);
    for (const json of [[], ["--json"]]) {
      const ls = isochain("trace", "ls", "--store", dir, ...json);
      expect(ls.code, ls.stderr).toBe(0);
      expect(ls.stdout).toContain("fine");
      expect(ls.stdout).not.toContain("broken-one");
      expect(ls.stderr).toBe(`isochain trace ls: not listed, could not be read: TRACE_INVALID: ${path}: Trace event 1 (chain-end) has a malformed "outputText".\n`);
    }
    // A limit the readable traces do not fill: every file was read, and the damaged one is named.
    expect(isochain("trace", "ls", "--store", dir, "--limit", "5").stderr).toContain(path);
  });

  it("finds a trace by prefix from the file names, loading only the match", async () => {
    const dir = store();
    for (const id of ["aaaa1111-x", "aaaa2222-y", "bbbb3333-z"]) traceFile(join(dir, "traces", `${id}.trace`), [chainStartEvent(id), chainEndEvent()]);
    const traces = new FileTraceStore({ dir: join(dir, "traces") });
    const load = vi.spyOn(traces, "load");
    expect((await resolveTrace("bbbb", traces, dir)).chainId).toBe("bbbb3333-z");
    // The ref as a whole id first (there is no such file), then the one match; no other trace.
    expect(load.mock.calls).toEqual([["bbbb"], ["bbbb3333-z"]]);
    await expect(resolveTrace("aaaa", traces, dir)).rejects.toThrow('"aaaa" matches 2 traces (aaaa1111-x, aaaa2222-y, ...): give more of the id.');
    await expect(resolveTrace("cccc", traces, dir)).rejects.toThrow(`No trace "cccc": not a .trace file, and no chain id in the store starts with it. See \`isochain trace ls --store ${dir}\`.`);
  });
});

describe("isochain CLI: hand-made traces that fold but are not traces", () => {
  it("are refused as TRACE_INVALID naming the file and the field, never a TypeError, by every command", () => {
    const cases: [string, object[], string][] = [
      ["tools-null", [chainStartEvent("h", { toolbox: { tools: [null], digest: "d" } as never }), chainEndEvent()], 'Trace event 0 (chain-start) has a missing or malformed "toolbox".'],
      ["parent-obj", [chainStartEvent("h", { parentChainId: { toString: 1 } as never }), chainEndEvent()], 'Trace event 0 (chain-start) has a malformed "parentChainId".'],
      ["output-num", [chainStartEvent("h"), chainEndEvent({ outputText: 5 as never })], 'Trace event 1 (chain-end) has a malformed "outputText".'],
      ["error-null", [chainStartEvent("h"), chainEndEvent({ status: "error", error: null as never })], 'Trace event 1 (chain-end) has a malformed "error".'],
      ["error-line", [chainStartEvent("h"), chainEndEvent({ status: "error", error: { phase: "runtime", name: "E", message: "m", line: "2" } as never })], 'Trace event 1 (chain-end) has a malformed "error".'],
      [
        "policy-bad",
        [chainStartEvent("h", { policy: { maxToolCalls: -5 } as never }), chainEndEvent()],
        "not a chain trace: its policy is not one a chain could have run under: ChainPolicy.maxToolCalls must be an integer from 0 to 1000000; got -5 (a damaged or hand-edited file?).",
      ],
    ];
    for (const [name, events, problem] of cases) {
      const path = traceFile(join(cwd, "hand-made", `${name}.trace`), events);
      for (const args of [["trace", "show"], ["trace", "show", "--json"], ["trace", "export", "--test"], ["replay"]]) {
        const [command, ...rest] = args;
        const shown = isochain(command as string, ...(command === "trace" ? [rest[0] as string, path, ...rest.slice(1)] : [path]));
        expect(shown.code, `${name}: ${args.join(" ")}`).toBe(2);
        expect(shown.stderr, `${name}: ${args.join(" ")}`).toBe(`isochain: TRACE_INVALID: ${path}: ${problem}\n`);
      }
    }
  }, 90_000);
});

describe("isochain CLI: --store", () => {
  it('refuses --store "" before anything is read or created, as --out "" is', () => {
    const empty = mkdtempSync(join(cwd, "empty-store-cwd-"));
    const said = 'isochain: CLI_USAGE: The store "" cannot be used: the path is empty. Pass a folder with --store DIR, or leave out --store for the default .isochain.\n';
    for (const args of [["run", WON_DEALS, "--tools", TOOLS, "--approve", "auto"], ["trace", "ls"], ["trace", "show", "abc"], ["replay", "abc"], ["replay", "abc", "--resume", "--tools", TOOLS]]) {
      const child = spawnSync(process.execPath, ["--no-node-snapshot", MAIN, ...args, "--store="], { cwd: empty, encoding: "utf8", timeout: 60_000 });
      expect(child.status, args.join(" ")).toBe(2);
      expect(child.stderr, args.join(" ")).toBe(said);
      expect(readdirSync(empty), args.join(" ")).toEqual([]);
    }
  }, 90_000);

  it("is in the commands a run prints to paste next, each path quoted for the shell", () => {
    const dir = join(cwd, "a store with 'quotes' and spaces");
    const tools = join(cwd, "tool module $HOME.ts");
    writeFileSync(tools, readFileSync(TOOLS, "utf8").replaceAll('from "../src/index.ts"', `from ${JSON.stringify(INDEX)}`));
    const run = isochain("run", WON_DEALS, "--tools", tools, "--approve", "suspend", "--store", dir);
    expect(run.code, run.stderr).toBe(3);
    const quotedDir = `'${dir.replaceAll("'", "'\\''")}'`;
    const show = /\(isochain trace show ([0-9a-f]{8}) --store (.+)\)\n/.exec(run.stdout);
    expect(show?.[2], run.stdout).toBe(quotedDir);
    const resume = /resume with: (isochain replay .*)\n/.exec(run.stdout)?.[1] ?? "";
    expect(resume).toBe(`isochain replay ${savedTraceId(run.stdout)} --resume --decision approved|denied|skipped --tools '${tools}' --store ${quotedDir}`);
    // Pasted into a shell (the decision picked), each finds the trace this run saved.
    const paste = (command: string): ReturnType<typeof spawnSync> =>
      spawnSync("sh", ["-c", command.replace(/^isochain /, `${JSON.stringify(process.execPath)} --no-node-snapshot ${JSON.stringify(MAIN)} `)], { cwd, encoding: "utf8", timeout: 60_000 });
    const shown = paste(`isochain trace show ${show?.[1]} --store ${show?.[2]}`);
    expect(shown.status, String(shown.stderr)).toBe(0);
    const resumed = paste(resume.replace("approved|denied|skipped", "approved"));
    expect(resumed.status, String(resumed.stderr)).toBe(0);
    expect(resumed.stdout).toContain("ran live: c3");
  }, 90_000);
});

describe("isochain CLI: line breaks in trace fields", () => {
  it("are escaped in trace ls and trace show, so a crafted trace cannot add rows or lines", () => {
    const dir = mkdtempSync(join(cwd, "line-breaks-"));
    const fake = "\nfake-chain  2020-01-01T00:00:00.000Z  ok  0\u2028x\u2029y";
    traceFile(join(dir, "traces", "crafted.trace"), [
      chainStartEvent("crafted", { parentChainId: `parent${fake}`, toolbox: { tools: [{ name: `echo${fake}`, risk: "safe", schemaDigest: "s" }], digest: "d" } }),
      toolCallEvent(0, { callId: `c0${fake}`, tool: `echo${fake}` }),
      toolResultEvent(0, { callId: `c0${fake}` }),
      toolCallEvent(1, { callId: `c1${fake}` }),
      chainEndEvent(),
    ]);
    const ls = isochain("trace", "ls", "--store", dir);
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout.trimEnd().split("\n")).toHaveLength(2);
    expect(ls.stdout).toContain("parent\\u000afake-chain");
    expect(ls.stdout).toContain("\\u2028x\\u2029y");
    const show = isochain("trace", "show", "crafted", "--store", dir);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).not.toMatch(/[\u2028\u2029]|\nfake-chain/);
    expect(show.stdout).toContain("(resumes parent\\u000afake-chain");
    expect(show.stdout).toMatch(/\n {2}0 +c0\\u000afake-chain {2}2020-01-01T00:00:00\.000Z {2}ok {2}0\\u2028x\\u2029y +echo\\u000afake-chain/);
    // A trace loaded by path whose chain id no chain could have is refused, naming the file.
    const byPath = traceFile(join(dir, "by-path.trace"), [chainStartEvent(`odd${fake}`), chainEndEvent()]);
    for (const args of [["trace", "show", byPath], ["replay", byPath], ["replay", byPath, "--resume", "--force", "--tools", TOOLS]]) {
      const refused = isochain(...args);
      expect(refused.code, args.join(" ")).toBe(2);
      expect(refused.stdout).toBe("");
      expect(refused.stderr, args.join(" ")).toContain(`TRACE_INVALID: ${byPath}: not a chain trace: chainId "odd\\nfake-chain  2020-01-01T00:00:00.000Z  ok  0`);
      expect(refused.stderr).toContain('" is not 1 to 128 letters, digits, "_" or "-" (a damaged or hand-edited file?).');
      expect(refused.stderr).not.toMatch(/[\u2028\u2029]|\nfake-chain/);
    }
  });
});
