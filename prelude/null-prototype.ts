/**
 * Objects the prelude writes to while script code runs must not reach the script's prototypes. A
 * write to an index a plain array does not have yet (every append) is looked up on
 * `Array.prototype` and `Object.prototype`, which belong to the script: a setter there takes the
 * value (it never lands, and the script sees it), a read-only index makes the write throw, a
 * Proxy set as `Array.prototype`'s prototype traps it; a read past the end runs a getter. With a
 * `null` prototype, reads and writes stay on the object itself, whatever the script did.
 *
 * Such an array has no methods: index reads and writes and `length` only. `Array.isArray` holds,
 * and the host receives its copy as an ordinary array of its own realm.
 * @module
 */

const setPrototypeOf = Object.setPrototypeOf;

/** `value`, its prototype set to `null` (no copy, no allocation). */
export function withNullPrototype<T extends object>(value: T): T {
  return setPrototypeOf(value, null) as T;
}
