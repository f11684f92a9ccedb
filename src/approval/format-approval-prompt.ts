import { type ApprovalDecision, type ApprovalRequest, escapeTerminalText } from "../kernel/index.ts";

/** Longest argument text a prompt shows, in characters, when none is given. */
export const DEFAULT_MAX_ARGS_CHARS = 2000;

/**
 * Text safe to print on a terminal: what {@link escapeTerminalText} escapes (control characters,
 * DEL, C1 controls, bidi controls that could make a terminal show something other than what will
 * run) and tabs become `\uXXXX`. Newlines become `\n` too unless `keepNewlines` is set.
 */
export function escapeForTerminal(text: string, keepNewlines = false): string {
  const escaped = escapeTerminalText(text).replace(/\t/g, "\\u0009");
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
