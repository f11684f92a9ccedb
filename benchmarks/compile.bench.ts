/**
 * Compiling a ~2 KB TypeScript script (`COMPILE_SOURCE`): a cache miss (a new source every
 * iteration: the script plus a numbered comment) and a hit (the same text again). Each
 * iteration gets a freshly allocated string, built untimed in `between()`, because a script
 * arriving from a model is a new string whose hash V8 has not cached yet.
 *
 * Floors: esbuild's `transformSync` of the same text (what a miss cannot beat) and a `Map.get`
 * keyed by the text (what a content-keyed hit cannot beat).
 * Targets (isochain): miss <= 2 ms, hit <= 20 µs.
 * @module
 */
import { transformSync } from "esbuild";
import type { BenchFile, Scenario } from "./harness.ts";
import { COMPILE_SOURCE } from "./support/fixtures.ts";
import { type CompileScriptLike, loadCompileScript } from "./support/isochain.ts";

const GROUP = "compile";

/** A copy of `text` that shares no storage (and no cached hash) with it. */
function freshCopy(text: string): string {
  return Buffer.from(text, "utf8").toString("utf8");
}

let counter = 0;
let missSource = COMPILE_SOURCE;
const nextMiss = (): void => {
  missSource = `${COMPILE_SOURCE}\n// variant ${counter++}\n`;
};

const esbuildMiss: Scenario = {
  name: "esbuild/transform",
  group: GROUP,
  description: "esbuild.transformSync(ts -> js) of the same script: the floor of a miss",
  setup: nextMiss,
  run: () => transformSync(`(async () => {\n${missSource}\n})();`, { loader: "ts", target: "es2022", sourcemap: "external" }),
  between: nextMiss,
};

let compileMiss: CompileScriptLike | undefined;
const isochainMiss: Scenario = {
  name: "isochain/compile-miss",
  group: GROUP,
  baseline: "esbuild/transform",
  target: { label: "<= 2 ms", maxNs: 2e6 },
  description: "compileScript of a source it has not seen",
  async setup() {
    compileMiss = await loadCompileScript();
    nextMiss();
    const result = compileMiss(missSource);
    if (!result.ok) throw new Error(`compileScript failed: ${result.error?.message ?? "not ok"}`);
  },
  run() {
    compileMiss?.(missSource);
  },
  between: nextMiss,
};

const lookup = new Map<string, number>([[COMPILE_SOURCE, 1]]);
let hitSource = freshCopy(COMPILE_SOURCE);
const nextHit = (): void => {
  hitSource = freshCopy(COMPILE_SOURCE);
};

const mapHit: Scenario = {
  name: "floor/map-get",
  group: GROUP,
  description: "Map.get keyed by a fresh copy of the 2 KB text: the floor of a content-keyed hit",
  run: () => lookup.get(hitSource),
  between: nextHit,
};

let compileHit: CompileScriptLike | undefined;
const isochainHit: Scenario = {
  name: "isochain/compile-hit",
  group: GROUP,
  baseline: "floor/map-get",
  target: { label: "<= 20 µs", maxNs: 20e3 },
  description: "compileScript of a source compiled before (a fresh copy of it)",
  async setup() {
    compileHit = await loadCompileScript();
    const result = compileHit(COMPILE_SOURCE);
    if (!result.ok) throw new Error(`compileScript failed: ${result.error?.message ?? "not ok"}`);
  },
  run() {
    compileHit?.(hitSource);
  },
  between: nextHit,
};

export default { scenarios: [esbuildMiss, isochainMiss, mapHit, isochainHit] } satisfies BenchFile;
