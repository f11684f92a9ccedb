import { fileURLToPath } from "node:url";
import { describeThrown } from "../index.ts";
import { writeErr } from "./terminal-text.ts";

/**
 * Errors nothing catches in the code the command runs (the tool module): a promise it rejects
 * and never handles (`Promise.reject(...)` at import, a rejected default export, a promise a
 * tool's `execute` leaves behind) or a throw from a timer or event of its own. Node would end
 * the command there with its raw stack and exit 1, the code of a chain that failed, and leave
 * the run's trace without its end (its lease naming a dead process). The command says what
 * happened and where, once per error up to {@link MAX_REPORTED}, and goes on: the run finishes,
 * its trace is whole, and the exit code is the command's own.
 */
export function reportStrayErrors(): void {
  process.on("unhandledRejection", (reason) => report("left a promise rejection unhandled", reason, "catch it where the promise is made (.catch, or await it)"));
  process.on("uncaughtException", (error) => report("threw outside any tool call (a timer or event of its own)", error, "catch it in that callback"));
}

/** Stray errors reported one by one; after these, one line says more were left out. */
const MAX_REPORTED = 5;
let strays = 0;

function report(what: string, thrown: unknown, fix: string): void {
  strays++;
  if (strays > MAX_REPORTED + 1) return;
  if (strays > MAX_REPORTED) {
    writeErr(`isochain: warning: more errors of the tool module's own were left out.\n`);
    return;
  }
  writeErr(`isochain: warning: the tool module ${what}: ${describeThrown(thrown)}${placeOf(thrown)}. The command goes on; ${fix}.\n`);
}

/** ` (at <file>:<line>:<column>)` of the first frame of the error's stack, or `""`. Never throws. */
function placeOf(thrown: unknown): string {
  try {
    const stack = (thrown as { stack?: unknown } | null)?.stack;
    if (typeof stack !== "string") return "";
    const frame = /^\s+at (?:.*?\()?((?:file:\/\/)?\/.*?):(\d+):(\d+)\)?$/m.exec(stack);
    if (frame === null) return "";
    const [, file = "", line, column] = frame;
    return ` (at ${file.startsWith("file://") ? fileURLToPath(file) : file}:${line}:${column})`;
  } catch {
    return "";
  }
}
