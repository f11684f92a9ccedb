/**
 * What the command is waiting on, for when it never finishes.
 *
 * A promise that never settles and holds nothing open (a tool module whose top-level await
 * waits on a promise nobody resolves) leaves Node with no work: the event loop drains and the
 * process exits with `process.exitCode` as it stands, printing nothing. Neither `try` nor
 * `catch` runs. So main.ts sets exit code 2 before the command starts (a command that never
 * settles did not do what was asked) and, on `beforeExit` while the command is unsettled,
 * prints {@link stalledStep}: what the innermost step still waiting said it would be.
 *
 * Steps nest (the command around a module load); each is removed when its promise settles,
 * whichever way.
 * @module
 */

/** The message of each step now awaited, innermost last. */
const pending: string[] = [];

/**
 * `promise`, awaited as a step whose message, should the event loop drain under it, is
 * `stalled`: one line saying what never finished, where, and how to fix it (e.g. "Could not
 * load the tool module X: its top-level await never settled ...").
 */
export async function awaitStep<T>(stalled: string, promise: Promise<T>): Promise<T> {
  pending.push(stalled);
  try {
    return await promise;
  } finally {
    pending.splice(pending.lastIndexOf(stalled), 1);
  }
}

/** The message of the innermost step still awaited, or `undefined` when none is. */
export function stalledStep(): string | undefined {
  return pending.at(-1);
}
