/**
 * `text` cut to at most `max` characters (code points), the last one `…` when something was cut.
 * Never half a surrogate pair: a cut that split one would leave a lone surrogate, which a
 * terminal shows as a replacement character and JSON as `\udXXX`.
 */
export function clipText(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : `${chars.slice(0, Math.max(0, max - 1)).join("")}…`;
}
