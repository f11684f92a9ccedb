import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/** What a fixture host did: its exit code, its stderr and the JSON line it printed. */
export interface HostReport {
  readonly code: number | null;
  readonly stderr: string;
  readonly report: Record<string, unknown>;
}

/**
 * Runs `test/fixtures/<fixture>` in a Node process of its own (under `ulimit -n <fdLimit>` when
 * given), killed after `timeoutMs`: a host that hangs fails its test instead of holding it.
 */
export async function runHost(fixture: string, options: { fdLimit?: number; args?: readonly string[]; timeoutMs?: number } = {}): Promise<HostReport> {
  const path = fileURLToPath(new URL(`../fixtures/${fixture}`, import.meta.url));
  const limit = options.fdLimit === undefined ? "" : `ulimit -n ${options.fdLimit} && `;
  const host = spawn("bash", ["-c", `${limit}exec "$0" --no-node-snapshot "$@"`, process.execPath, path, ...(options.args ?? [])], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  host.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text));
  host.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text));
  const hung = setTimeout(() => host.kill("SIGKILL"), options.timeoutMs ?? 20_000);
  const code = await new Promise<number | null>((resolve) => host.on("close", resolve));
  clearTimeout(hung);
  return { code, stderr, report: code === 0 ? (JSON.parse(stdout) as Record<string, unknown>) : { stdout } };
}
