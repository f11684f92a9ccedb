/**
 * The host's own bound on a run's console output, behind the prelude's (which a script can
 * defeat by patching the string methods it uses): bytes are counted as UTF-8, as
 * `maxOutputBytes` is, and the line that crosses the bound is cut to fit, never half a
 * character. Used by both drivers' hosts.
 * @module
 */

/**
 * The part of `text` to forward when `counted` bytes of output went before and `cap` is the
 * bound, with the bytes counted after it and whether it was cut (the caller then adds the
 * truncation marker the prelude would have written, within the `reserve` bytes a cut line leaves
 * free); `undefined` once the bound is reached.
 */
export function boundLogLine(
  text: string,
  counted: number,
  cap: number,
  reserve = 0,
): { readonly text: string; readonly counted: number; readonly cut: boolean } | undefined {
  const room = cap - counted;
  if (room <= 0) return undefined;
  // No UTF-16 unit takes more than 3 UTF-8 bytes: most lines need no exact count.
  if (text.length * 3 <= room) return { text, counted: counted + Buffer.byteLength(text, "utf8"), cut: false };
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes <= room) return { text, counted: counted + bytes, cut: false };
  return { text: utf8Prefix(text, Math.max(0, room - reserve)), counted: cap, cut: true };
}

/** The longest prefix of `text` that takes at most `maxBytes` bytes of UTF-8 and does not split a surrogate pair. */
export function utf8Prefix(text: string, maxBytes: number): string {
  let low = 0;
  let high = Math.min(text.length, maxBytes);
  while (low < high) {
    const mid = (low + high + 1) >>> 1;
    if (Buffer.byteLength(text.slice(0, mid), "utf8") <= maxBytes) low = mid;
    else high = mid - 1;
  }
  const last = text.charCodeAt(low - 1);
  if (low > 0 && last >= 0xd800 && last <= 0xdbff) low -= 1;
  return text.slice(0, low);
}
