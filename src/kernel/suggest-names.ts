/**
 * "Did you mean" for names a caller or a model got slightly wrong (tools, policy fields, CLI
 * options). {@link suggestNames} is public (the CLI and embedders' own messages use it);
 * `editDistance` is internal.
 * @module
 */

/** Most names {@link suggestNames} returns. */
const MAX_SUGGESTIONS = 5;

/**
 * The names in `names` closest to `name`, best first: case-insensitive edit distance within a
 * third of the length (at least 2), or one containing the other. At most 5.
 */
export function suggestNames(name: string, names: Iterable<string>): string[] {
  const wanted = name.toLowerCase();
  const limit = Math.max(2, Math.floor(wanted.length / 3));
  const scored: { name: string; score: number }[] = [];
  for (const candidate of names) {
    const lower = candidate.toLowerCase();
    let score = editDistance(wanted, lower, limit);
    if (score > limit && (lower.includes(wanted) || wanted.includes(lower))) score = limit;
    if (score <= limit) scored.push({ name: candidate, score });
  }
  scored.sort((a, b) => a.score - b.score || a.name.localeCompare(b.name));
  return scored.slice(0, MAX_SUGGESTIONS).map((entry) => entry.name);
}

/** Levenshtein distance of `a` and `b`, giving up (returning `limit + 1`) once it must exceed `limit`. */
export function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let previous = new Array<number>(b.length + 1);
  let current = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) previous[j] = j;
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      const value = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
      current[j] = value;
      if (value < rowMin) rowMin = value;
    }
    if (rowMin > limit) return limit + 1;
    [previous, current] = [current, previous];
  }
  return previous[b.length] ?? limit + 1;
}
