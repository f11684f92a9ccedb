import type { InvocationErrorCode, InvocationFailure } from "../kernel/index.ts";

/**
 * Builds a failed {@link InvocationFailure}: `status` is `"error"` unless the approval gate said
 * no (`"denied"`). `text` is what the script or model reads, so it says what happened and what
 * to do next.
 */
export function invocationFailure(
  code: InvocationErrorCode,
  text: string,
  status: InvocationFailure["status"] = "error",
): InvocationFailure {
  return { status, code, text };
}

/** True for an {@link InvocationFailure} produced by a gate (gates return one or pass). */
export function isInvocationFailure(value: unknown): value is InvocationFailure {
  return (
    typeof value === "object" &&
    value !== null &&
    ((value as { status?: unknown }).status === "error" || (value as { status?: unknown }).status === "denied") &&
    typeof (value as { code?: unknown }).code === "string"
  );
}
