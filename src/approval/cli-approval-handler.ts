/**
 * CliApprovalHandler: asks a human on a terminal.
 *
 * Invariants:
 * - One prompt at a time: concurrent requests queue in arrival order; a request whose signal
 *   aborts while queued resolves `"denied"` at once and is never shown.
 * - Only a line typed while a prompt is shown answers it. Lines already buffered in `input` when
 *   the handler starts listening, and lines that arrive between two prompts (type-ahead, a stray
 *   Enter), are dropped: earlier keystrokes are not consent. (Bytes still in the OS terminal
 *   buffer are out of reach and count as typed after the prompt.)
 * - The readline interface exists only while requests are queued or shown, so an idle handler
 *   neither holds `input` open nor keeps the process alive.
 * - When `input` ends, the current and every later request resolve `"denied"`.
 * - On abort the prompt resolves `"denied"`, prints why, and removes its listeners.
 */
import { createInterface, type Interface } from "node:readline";
import { checkOptionNames, optionNames } from "../kernel/check-option-shape.ts";
import {
  ChainRuntimeError,
  type ApprovalDecision,
  type ApprovalHandler,
  type ApprovalRequest,
  type ApprovalRequestOptions,
} from "../kernel/index.ts";
import { DEFAULT_MAX_ARGS_CHARS, escapeForTerminal, formatApprovalPrompt, parseApprovalAnswer } from "./format-approval-prompt.ts";

/** Every field of {@link CliApprovalHandlerOptions}. */
const CLI_APPROVAL_HANDLER_OPTION_NAMES = optionNames<CliApprovalHandlerOptions>({ input: true, output: true, maxArgsChars: true });

/** Options of a {@link CliApprovalHandler}. */
export interface CliApprovalHandlerOptions {
  /** Where answers are read from, one per line. @defaultValue `process.stdin` */
  readonly input?: NodeJS.ReadableStream;
  /** Where prompts are written. @defaultValue `process.stdout` */
  readonly output?: NodeJS.WritableStream;
  /** Longest argument text shown per prompt, in characters. @defaultValue 2000 */
  readonly maxArgsChars?: number;
}

/**
 * An {@link ApprovalHandler} that prints each request (tool, risk, pretty-printed and
 * truncated arguments) and asks `Approve? [y/N/s(kip)]`. `y`/`yes` approve, `s`/`skip` skip,
 * anything else denies. See the module comment for queueing and abort behaviour.
 */
export class CliApprovalHandler implements ApprovalHandler {
  readonly #input: NodeJS.ReadableStream;
  readonly #output: NodeJS.WritableStream;
  readonly #maxArgsChars: number;
  #queue: Promise<unknown> = Promise.resolve();
  #inFlight = 0;
  #reader: Interface | undefined;
  #lineWaiter: ((line: string | undefined) => void) | undefined;
  #inputEnded = false;

  /** @param options - see {@link CliApprovalHandlerOptions}. Throws `ARGUMENT_INVALID` for a bad `maxArgsChars`. */
  constructor(options: CliApprovalHandlerOptions = {}) {
    checkOptionNames("CliApprovalHandler", options, CLI_APPROVAL_HANDLER_OPTION_NAMES);
    const maxArgsChars = options.maxArgsChars ?? DEFAULT_MAX_ARGS_CHARS;
    if (!Number.isSafeInteger(maxArgsChars) || maxArgsChars < 1) {
      throw new ChainRuntimeError("ARGUMENT_INVALID", `maxArgsChars must be an integer >= 1; got ${String(maxArgsChars)}.`, {
        details: { argument: "maxArgsChars", value: maxArgsChars },
      });
    }
    this.#input = options.input ?? process.stdin;
    this.#output = options.output ?? process.stdout;
    this.#maxArgsChars = maxArgsChars;
  }

  /** Shows `request` once earlier prompts are answered, and resolves with the human's answer. */
  request(request: ApprovalRequest, options: ApprovalRequestOptions): Promise<ApprovalDecision> {
    const { signal } = options;
    return new Promise<ApprovalDecision>((resolve, reject) => {
      // While queued, an abort answers at once; once shown, #ask handles the abort itself.
      const onQueuedAbort = (): void => resolve("denied");
      signal.addEventListener("abort", onQueuedAbort, { once: true });
      this.#inFlight += 1;
      const turn = this.#queue.then(() => {
        signal.removeEventListener("abort", onQueuedAbort);
        return this.#ask(request, signal);
      });
      this.#queue = turn.catch(() => {});
      turn
        .finally(() => {
          signal.removeEventListener("abort", onQueuedAbort);
          this.#inFlight -= 1;
          if (this.#inFlight === 0) this.#closeReader();
        })
        .then(resolve, reject);
    });
  }

  async #ask(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision> {
    if (signal.aborted) return "denied";
    if (this.#inputEnded || isEnded(this.#input)) {
      this.#inputEnded = true;
      this.#output.write(`\nApproval needed: ${escapeForTerminal(request.tool)}: input is closed, denied.\n`);
      return "denied";
    }
    this.#output.write(formatApprovalPrompt(request, this.#maxArgsChars));
    const line = await this.#nextLine(signal);
    if (line === undefined) {
      this.#output.write(signal.aborted ? "\n(no answer in time: denied)\n" : "\n(input closed: denied)\n");
      return "denied";
    }
    const decision = parseApprovalAnswer(line);
    this.#output.write(`-> ${decision}\n`);
    return decision;
  }

  /** The next line typed, or `undefined` when the signal aborts or the input ends first. */
  #nextLine(signal: AbortSignal): Promise<string | undefined> {
    this.#openReader();
    return new Promise((resolve) => {
      const finish = (line: string | undefined): void => {
        if (this.#lineWaiter === finish) this.#lineWaiter = undefined;
        signal.removeEventListener("abort", onAbort);
        resolve(line);
      };
      const onAbort = (): void => finish(undefined);
      this.#lineWaiter = finish;
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  #openReader(): void {
    if (this.#reader !== undefined) return;
    drainBuffered(this.#input);
    const reader = createInterface({ input: this.#input, terminal: false, crlfDelay: Infinity });
    reader.on("line", this.#onLine);
    reader.on("close", this.#onClose);
    this.#reader = reader;
  }

  #closeReader(): void {
    const reader = this.#reader;
    if (reader === undefined) return;
    this.#reader = undefined;
    reader.off("line", this.#onLine);
    reader.off("close", this.#onClose);
    reader.close();
  }

  readonly #onLine = (line: string): void => {
    this.#lineWaiter?.(line);
  };

  readonly #onClose = (): void => {
    this.#inputEnded = true;
    this.#reader = undefined;
    this.#lineWaiter?.(undefined);
  };
}

/** Discards what a paused stream already holds, so it cannot answer a prompt not yet shown. */
function drainBuffered(input: NodeJS.ReadableStream): void {
  const stream = input as { readableFlowing?: boolean | null; read?: () => unknown };
  if (stream.readableFlowing === true || typeof stream.read !== "function") return;
  while (stream.read() !== null) {
    // discard
  }
}

function isEnded(input: NodeJS.ReadableStream): boolean {
  const stream = input as { readableEnded?: boolean; destroyed?: boolean };
  return stream.readableEnded === true || stream.destroyed === true;
}
