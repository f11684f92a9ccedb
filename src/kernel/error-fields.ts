/**
 * Reading a thrown value as an Error without letting it throw again: `instanceof` runs a proxy's
 * `getPrototypeOf` trap, and `name` / `message` may be getters that throw (even the value
 * itself). Shared by `describeThrown` and the invoker's report of a tool's throw.
 * @module
 */

/**
 * `value`'s `name` and `message` (as read, of any type) when it is an Error; `"unreadable"` when
 * it is one whose fields throw; `undefined` when it is not an Error (or cannot be told). Never throws.
 */
export function readErrorFields(value: unknown): { readonly name: unknown; readonly message: unknown } | "unreadable" | undefined {
  let isError = false;
  try {
    isError = value instanceof Error;
  } catch {
    // a proxy whose getPrototypeOf trap throws: not an Error we can read
  }
  if (!isError) return undefined;
  try {
    const { name, message } = value as { name: unknown; message: unknown };
    return { name, message };
  } catch {
    return "unreadable";
  }
}
