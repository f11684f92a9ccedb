import { LIMIT_HINTS } from "../../sandbox/limits.ts";
import type { ChainCallRecord, ChainError, ChainRunStatus, ChainRunWarning, UnhandledRejectionWarning } from "../kernel/index.ts";

/** Call numbers a warning spells out; the rest are counted. */
const MAX_LISTED_SEQS = 10;

/**
 * The warnings of a finished run (see {@link ChainRunWarning}), or `undefined` when there are
 * none. Only a run that ended `ok` gets any: a failed run's error says what went wrong.
 *
 * `unansweredCalls` are the call indexes the sandbox reported unanswered when the script
 * returned (a call's id is `c<callIndex>`). A call recorded `CANCELLED` counts too: in a run that
 * ended `ok`, nothing else cancels a call (a caller's signal ends the run `cancelled`).
 * `rejections` are the promise rejections the script left unhandled, mapped to its source.
 */
export function runWarnings(
  status: ChainRunStatus,
  callTrace: readonly ChainCallRecord[],
  unansweredCalls: readonly number[] | undefined,
  rejections: readonly ChainError[] | undefined,
): ChainRunWarning[] | undefined {
  if (status !== "ok") return undefined;
  const warnings: ChainRunWarning[] = [];
  const unanswered = unansweredCalls && unansweredCalls.length > 0 ? new Set(unansweredCalls.map((callIndex) => `c${callIndex}`)) : undefined;
  const seqs: number[] = [];
  for (const record of callTrace) if (record.code === "CANCELLED" || unanswered?.has(record.callId) === true) seqs.push(record.seq);
  if (seqs.length > 0) warnings.push({ code: "CALLS_NOT_AWAITED", message: notAwaitedMessage(seqs), seqs });
  for (const rejection of rejections ?? []) warnings.push(unhandledRejectionWarning(rejection));
  return warnings.length > 0 ? warnings : undefined;
}

/** The warning of one rejection the script left unhandled (see `UnhandledRejectionWarning`). */
function unhandledRejectionWarning(rejection: ChainError): UnhandledRejectionWarning {
  const { line, column } = rejection;
  const at = line === undefined ? "" : ` at line ${line}${column === undefined ? "" : `, column ${column}`}`;
  const what = rejection.name === "" ? rejection.message : `${rejection.name}: ${rejection.message}`;
  return {
    code: "UNHANDLED_REJECTION",
    message:
      `A promise was rejected${at} and nothing handled it: ${what}. The error never reached the script's result, so part of ` +
      "the work may not have happened. Await every promise the script starts (an async function's call too), or handle its " +
      "failure with try/catch or .catch().",
    ...(line === undefined ? {} : { line }),
    ...(column === undefined ? {} : { column }),
  };
}

function notAwaitedMessage(seqs: readonly number[]): string {
  const listed = listAtMost(seqs, (seq) => `#${seq}`);
  const count = seqs.length === 1 ? "1 tool call" : `${seqs.length} tool calls`;
  const one = seqs.length === 1;
  return (
    `${count} (${listed}) had not been answered when the script returned: the script never saw ` +
    `${one ? "its result" : "their results"}, and calls still running were cancelled (a tool may have acted before it stopped). ` +
    "Await every tool call the script depends on: `for (const x of xs) await tools.name(x)` or " +
    "`await Promise.all(xs.map((x) => tools.name(x)))` (`forEach` does not wait for async callbacks)."
  );
}

/**
 * A chain's `TimeoutError` with the calls it was waiting for when the time ran out (recorded
 * `CANCELLED`: the run's end stopped them), before the hint on what to do, e.g. `the chain ran
 * past totalTimeoutMs (2000 ms). It was waiting for tools.fetch_report (#3). Do less ...`, so the
 * model knows which tool was slow. Other errors come back as they are.
 */
export function withWaitedCalls(error: ChainError, callTrace: readonly ChainCallRecord[]): ChainError {
  if (error.name !== "TimeoutError") return error;
  const waited = callTrace.filter((record) => record.code === "CANCELLED");
  if (waited.length === 0) return error;
  const listed = listAtMost(waited, (record) => `tools.${record.tool} (#${record.seq})`);
  const hint = LIMIT_HINTS.timeout;
  const said = error.message.endsWith(hint) ? error.message.slice(0, -hint.length).trimEnd() : error.message;
  return { ...error, message: `${said} It was waiting for ${listed}.${said === error.message ? "" : ` ${hint}`}` };
}

/** The first {@link MAX_LISTED_SEQS} of `items`, shown and joined with commas, then how many more. */
function listAtMost<T>(items: readonly T[], show: (item: T) => string): string {
  const listed = items.slice(0, MAX_LISTED_SEQS).map(show).join(", ");
  return items.length > MAX_LISTED_SEQS ? `${listed} and ${items.length - MAX_LISTED_SEQS} more` : listed;
}
