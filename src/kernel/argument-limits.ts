/**
 * The bound on how much one call's arguments may hold, shared by the invoker (which checks every
 * call) and the sandbox's prelude (which refuses a call past it inside the isolate, before the
 * host spends anything on it).
 * @module
 */

/**
 * Most values (objects, arrays and primitives together) one argument tree may hold: 100 000.
 * The host parses, checks, validates and digests every one on its own thread, at ~2-3 µs each
 * for a large object: one call of 600 000 values held the event loop ~2 s. Data that large
 * belongs in an artifact.
 */
export const MAX_ARGUMENT_NODES = 100_000;
