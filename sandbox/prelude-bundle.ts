/**
 * The prelude as one minified IIFE, built on first use with esbuild and cached for the life of
 * the process. From a source checkout it bundles `prelude/index.ts`; from a published package
 * (where `prelude/` is not shipped) it reads the prebuilt `dist/prelude.js` that the build step
 * writes with {@link buildPreludeBundle}.
 * @module
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { BuildOptions, BuildResult } from "esbuild";
import { BRIDGE_GLOBALS } from "../src/bridge/protocol.ts";
import { callEsbuild, esbuild } from "../src/kernel/esbuild-service.ts";
import { ChainRuntimeError } from "../src/kernel/index.ts";

const SOURCE_ENTRY = new URL("../prelude/index.ts", import.meta.url);
const PREBUILT = new URL("../prelude.js", import.meta.url);

/**
 * The bundle's last statement: takes the bridge function off the global object, so it is the
 * script's completion value (what `Script.run(context, { reference: true })` hands the host)
 * and nothing in the context can reach it.
 */
const TAKE_BRIDGE = `;(()=>{const b=globalThis.${BRIDGE_GLOBALS.bridge};delete globalThis.${BRIDGE_GLOBALS.bridge};return b})();`;

/** How the prelude is bundled: a minified IIFE (ES2023; esbuild keeps the modules' strict mode) and {@link TAKE_BRIDGE}. */
function bundleOptions(): BuildOptions & { write: false } {
  return {
    entryPoints: [fileURLToPath(SOURCE_ENTRY)],
    bundle: true,
    format: "iife",
    minify: true,
    target: "es2023",
    platform: "neutral",
    write: false,
    legalComments: "none",
    footer: { js: TAKE_BRIDGE },
  };
}

/** The bundle's text from esbuild's result. */
function bundleText(result: BuildResult<{ write: false }>): string {
  const file = result.outputFiles[0];
  if (file === undefined) throw new Error("esbuild produced no output");
  return file.text;
}

function buildFailed(error: unknown): never {
  throw new ChainRuntimeError("SANDBOX_FAILED", `Could not build the sandbox prelude: ${String(error)}`, { cause: error });
}

/**
 * Bundles `prelude/index.ts` into a minified IIFE followed by one statement whose value is the
 * prelude's bridge function, and returns its text. Blocks the thread until esbuild is done (see
 * {@link loadPreludeSource} for the way that does not). Throws `ChainRuntimeError`
 * `SANDBOX_FAILED` when esbuild fails.
 */
export function buildPreludeBundle(): string {
  try {
    return bundleText(esbuild().buildSync(bundleOptions()));
  } catch (error) {
    return buildFailed(error);
  }
}

/** {@link buildPreludeBundle} through esbuild's asynchronous API. */
async function buildPreludeBundleAsync(): Promise<string> {
  try {
    return bundleText(await callEsbuild((api) => api.build(bundleOptions())));
  } catch (error) {
    return buildFailed(error);
  }
}

let cached: string | undefined;
let loading: Promise<string> | undefined;

/**
 * The prelude source to run in every fresh context; built once, then served from memory.
 * Throws `ChainRuntimeError` `SANDBOX_FAILED` when neither the source nor a prebuilt bundle is
 * found, or when the build fails. The drivers call {@link loadPreludeSource} first, so this
 * only serves the text from memory there.
 */
export function getPreludeSource(): string {
  cached ??= existsSync(SOURCE_ENTRY) ? buildPreludeBundle() : readPrebuilt();
  return cached;
}

/**
 * {@link getPreludeSource} without blocking the thread: from a source checkout the bundle is built
 * through esbuild's asynchronous API. Its synchronous one waits (`Atomics.wait`, without a timeout)
 * for a worker thread of esbuild's, and a first run started while the process was out of file
 * descriptors (a burst of queued chains, each holding its trace file) left that worker unable to
 * start and the whole host waiting forever. The text itself once it is in memory; a failed load
 * is tried again by the next call.
 */
export function loadPreludeSource(): string | Promise<string> {
  if (cached !== undefined) return cached;
  loading ??= (existsSync(SOURCE_ENTRY) ? buildPreludeBundleAsync() : Promise.resolve().then(readPrebuilt)).then(
    (text) => (cached ??= text),
    (error: unknown) => {
      loading = undefined;
      throw error;
    },
  );
  return loading;
}

/** The bundle a published package ships (`prelude.js`, written by the build step). */
function readPrebuilt(): string {
  if (!existsSync(PREBUILT)) {
    throw new ChainRuntimeError("SANDBOX_FAILED", "The sandbox prelude is missing: neither prelude/index.ts nor prelude.js was found.", {
      details: { source: fileURLToPath(SOURCE_ENTRY), prebuilt: fileURLToPath(PREBUILT) },
    });
  }
  return readFileSync(PREBUILT, "utf8");
}
