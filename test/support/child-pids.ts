import { readdirSync, readFileSync } from "node:fs";

/** Pids of this process's children named `name` (Linux: read from /proc). */
export function childPids(name: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/u.test(entry)) continue;
    try {
      const [, comm = "", rest = ""] = /^\d+ \((.*)\) (.*)$/su.exec(readFileSync(`/proc/${entry}/stat`, "utf8")) ?? [];
      if (comm === name && Number(rest.split(" ")[1]) === process.pid) found.push(Number(entry));
    } catch {
      // gone since it was listed
    }
  }
  return found;
}
