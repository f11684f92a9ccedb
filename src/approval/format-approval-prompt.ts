import type { ApprovalDecision, ApprovalRequest } from "../kernel/index.ts";

/** Longest argument text a prompt shows, in characters, when none is given. */
export const DEFAULT_MAX_ARGS_CHARS = 2000;

// C0 and C1 controls (but not \n, kept by callers that want it), DEL, and bidi overrides that
// could make a terminal show something other than what will run.
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * Text safe to print on a terminal: control characters (escape sequences), DEL, C1 controls
 * and bidi overrides become `\uXXXX`. Newlines are escaped too unless `keepNewlines` is set.
 */
export function escapeForTerminal(text: string, keepNewlines = false): string {
  const escaped = text.replace(UNSAFE, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);
  return keepNewlines ? escaped : escaped.replace(/\n/g, "\\n");
}

/**
 * The arguments as pretty JSON, cut to `maxChars` characters with a note of how much was left
 * out. Values JSON cannot show (BigInt, cycles) do not throw.
 */
export function formatApprovalArgs(args: unknown, maxChars: number = DEFAULT_MAX_ARGS_CHARS): string {
  let json: string;
  try {
    json = JSON.stringify(args, (_key, value: unknown) => (typeof value === "bigint" ? `${value}n` : value), 2) ?? "(none)";
  } catch {
    json = "(arguments not serialisable as JSON)";
  }
  if (json.length <= maxChars) return json;
  let cut = json.slice(0, maxChars);
  const last = cut.charCodeAt(cut.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return `${cut}\n... (${json.length - cut.length} more characters not shown)`;
}

/**
 * The block a terminal shows for one request, ending with the question
 * `Approve? [y/N/s(kip)] ` (no newline). Everything from the request is escaped with
 * {@link escapeForTerminal}.
 */
export function formatApprovalPrompt(request: ApprovalRequest, maxArgsChars: number = DEFAULT_MAX_ARGS_CHARS): string {
  const args = escapeForTerminal(formatApprovalArgs(request.args, maxArgsChars), true)
    .split("\n")
    .map((line) => `    ${line}`)
    .join("\n");
  return [
    "",
    `Approval needed: ${escapeForTerminal(request.tool)} (risk: ${escapeForTerminal(String(request.risk))})`,
    `  chain: ${escapeForTerminal(request.chainId)}  request: ${escapeForTerminal(request.id)}`,
    "  args:",
    args,
    "Approve? [y/N/s(kip)] ",
  ].join("\n");
}

/**
 * The decision a typed answer means, case and surrounding spaces ignored: `y`/`yes` approve,
 * `s`/`skip` skip, anything else (an empty line included) denies.
 */
export function parseApprovalAnswer(line: string): ApprovalDecision {
  const answer = line.trim().toLowerCase();
  if (answer === "y" || answer === "yes") return "approved";
  if (answer === "s" || answer === "skip") return "skipped";
  return "denied";
}
