/**
 * How a call's `InvocationResult` travels into the isolate: as JSON text, except a large `text`,
 * which crosses as the string itself next to it (the JSON then holds `"text":""`, so the script
 * sees its properties in the usual order once the prelude puts the text back).
 *
 * Why: a tool that returns 1 MiB of text put it through `JSON.stringify` on the host (~3 ms per
 * MiB here: every character is checked for escaping) and `JSON.parse` in the isolate (~1.3 ms),
 * and through the process driver's pipe as JSON inside msgpack. Sent apart it is copied, never
 * escaped or parsed. Small texts stay inside the JSON: one string is cheaper to move than two.
 * @module
 */
import { describeThrown, type InvocationErrorCode, type InvocationResult } from "../kernel/index.ts";

/** Shortest `text`, in UTF-16 code units, that is sent apart from the result's JSON. */
export const RAW_TEXT_MIN_LENGTH = 8 * 1024;

/**
 * A result ready to cross the bridge: the `InvocationResult` as JSON text and, when its `text`
 * was sent apart, that text (`resultJson` then carries `"text":""` in its place).
 */
export interface WireResult {
  readonly resultJson: string;
  readonly text?: string;
}

/** Options of {@link toWireResult}. */
export interface WireResultOptions {
  /**
   * Keep a `text` with lone surrogates inside the JSON (which escapes them) instead of sending
   * it apart: for carriers that encode strings as UTF-8 (the process driver's pipe), which
   * cannot represent them. Inside one process strings are copied as UTF-16 and need no check.
   * @defaultValue false
   */
  readonly utf8?: boolean;
}

/**
 * Serialises `result` for the bridge (see the module comment). Never throws: a result that
 * cannot be serialised becomes a `RESULT_INVALID` error result.
 */
export function toWireResult(result: InvocationResult, options?: WireResultOptions): WireResult {
  const text = result.text;
  try {
    if (
      typeof text === "string" &&
      text.length >= RAW_TEXT_MIN_LENGTH &&
      isPlainTextHolder(result) &&
      (options?.utf8 !== true || text.isWellFormed())
    ) {
      return { resultJson: validJson(JSON.stringify({ ...result, text: "" })), text };
    }
    return { resultJson: validJson(JSON.stringify(result)) };
  } catch (error) {
    return { resultJson: errorResultJson("RESULT_INVALID", `the result could not be serialised: ${describeThrown(error)}`) };
  }
}

/** The JSON text of an error `InvocationResult` with `code` and `text`. */
export function errorResultJson(code: InvocationErrorCode, text: string): string {
  return JSON.stringify({ status: "error", code, text });
}

/**
 * True when `JSON.stringify(result)` would write `result.text` as it is: a plain object whose own
 * `text` is an enumerable data property (no `toJSON`, accessor or prototype to consult), so the
 * copy with `text: ""` serialises like the original. Results the invoker makes always are.
 */
function isPlainTextHolder(result: object): boolean {
  if (Object.getPrototypeOf(result) !== Object.prototype || "toJSON" in result) return false;
  const descriptor = Object.getOwnPropertyDescriptor(result, "text");
  return descriptor !== undefined && descriptor.enumerable === true && "value" in descriptor;
}

function validJson(json: string | undefined): string {
  if (typeof json !== "string") throw new TypeError("the result is not a value");
  return json;
}
