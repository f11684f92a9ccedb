/**
 * The scripts, tools and payloads every runner in the suite shares, so that a figure and its
 * baseline always run the same code against the same data.
 * @module
 */

/** The scripts run inside each sandbox (bodies of an async function that sees `tools`). */
export const SCRIPTS = {
  /** No call: what acquiring a pooled sandbox and running nothing costs. */
  noop: "return 1;",
  /** One warm chain with one tool call. */
  oneCall: "return (await tools.echo({ n: 1 })).status;",
  /** 50 sequential calls; per-call cost = (this - oneCall) / 49. */
  sequential50: "for (let i = 0; i < 50; i++) await tools.echo({ n: i }); return 1;",
  /** 50 calls in flight at once. */
  parallel50: "await Promise.all(Array.from({ length: 50 }, (_, i) => tools.echo({ n: i }))); return 1;",
  /** A tool returning 1 MiB; with a blob store it is offloaded and the script sees a ref. */
  bigResult: "const r = await tools.big({}); return r.artifactRef ? 1 : 0;",
  /** CPU-bound, no calls: count the primes below 200 000 by trial division (17 984). */
  primes: [
    "let count = 1;",
    "for (let n = 3; n < 200000; n += 2) {",
    "  let prime = true;",
    "  for (let d = 3; d * d <= n; d += 2) { if (n % d === 0) { prime = false; break; } }",
    "  if (prime) count++;",
    "}",
    "return count;",
  ].join("\n"),
} as const;

/** What `SCRIPTS.primes` returns. */
export const PRIME_COUNT_BELOW_200K = 17_984;

/** The 1 MiB string the `big` tool returns (built once: the figure is the transfer, not the build). */
export const BIG_RESULT: string = "x".repeat(1024 * 1024);

/** The result shape the baseline runners hand back to scripts (mirrors `InvocationSuccess`). */
export interface BaselineToolResult {
  readonly status: "ok";
  readonly text: string;
  readonly structured?: Readonly<Record<string, unknown>>;
}

/** A host-side tool of the baseline runners: plain data in, plain data out. */
export type BaselineTool = (args: Readonly<Record<string, unknown>>) => BaselineToolResult | Promise<BaselineToolResult>;

/** `echo` and `big` for the baseline runners, doing the same work as the isochain tools. */
export const BASELINE_TOOLS: Readonly<Record<string, BaselineTool>> = {
  echo: (args) => ({ status: "ok", text: JSON.stringify(args), structured: args }),
  big: () => ({ status: "ok", text: BIG_RESULT }),
};

/**
 * A ~2 KB TypeScript script for the compile figures: types, an interface, generics and
 * `await tools.*` calls, like a model writes them.
 */
export const COMPILE_SOURCE: string = `
interface Row { readonly id: string; readonly score: number; readonly tags: readonly string[] }
type Summary = { total: number; best?: Row; byTag: Record<string, number> };

function summarize<T extends Row>(rows: readonly T[]): Summary {
  const byTag: Record<string, number> = {};
  let best: T | undefined;
  for (const row of rows) {
    for (const tag of row.tags) byTag[tag] = (byTag[tag] ?? 0) + 1;
    if (best === undefined || row.score > best.score) best = row;
  }
  return best === undefined ? { total: rows.length, byTag } : { total: rows.length, best, byTag };
}

const enumLike = { low: 1, medium: 2, high: 3 } as const;
type Level = keyof typeof enumLike;

async function fetchAll(queries: readonly string[], level: Level): Promise<Row[]> {
  const pages = await Promise.all(
    queries.map(async (q, i) => {
      const res = (await tools.echo({ n: i, q, level: enumLike[level] })) as { structured?: { n: number } };
      const n = res.structured?.n ?? i;
      return { id: \`\${q}-\${n}\`, score: n * enumLike[level], tags: [q, level] } satisfies Row;
    }),
  );
  return pages;
}

const queries: string[] = ["alpha", "beta", "gamma", "delta", "epsilon"];
const rows = await fetchAll(queries, "medium");
const summary = summarize(rows);
const sorted = [...rows].sort((a, b) => b.score - a.score).map(({ id, score }) => ({ id, score }));
const label = (s: Summary): string => \`\${s.total} rows, best \${s.best?.id ?? "none"}\`;
console.log(label(summary));
for (const [tag, count] of Object.entries(summary.byTag)) {
  if (count > 1) console.log(\`tag \${tag}: \${count}\`);
}
class Accumulator<T> {
  #items: T[] = [];
  add(item: T): this { this.#items.push(item); return this; }
  get size(): number { return this.#items.length; }
}
const acc = new Accumulator<{ id: string }>();
for (const r of sorted) acc.add({ id: r.id });
return { summary, top: sorted.slice(0, 3), size: acc.size };
`;
