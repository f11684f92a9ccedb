/**
 * The prelude as one minified IIFE, built on first use with esbuild and cached for the life of
 * the process. From a source checkout it bundles `prelude/index.ts`; from a published package
 * (where `prelude/` is not shipped) it reads the prebuilt `dist/prelude.js` that the build step
 * writes with {@link buildPreludeBundle}.
 * @module
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { buildSync as BuildSync } from "esbuild";
import { BRIDGE_GLOBALS } from "../src/bridge/protocol.ts";
import { ChainRuntimeError } from "../src/kernel/index.ts";

const SOURCE_ENTRY = new URL("../prelude/index.ts", import.meta.url);
const PREBUILT = new URL("../prelude.js", import.meta.url);

let cached: string | undefined;

/**
 * The bundle's last statement: takes the bridge function off the global object, so it is the
 * script's completion value (what `Script.run(context, { reference: true })` hands the host)
 * and nothing in the context can reach it.
 */
const TAKE_BRIDGE = `;(()=>{const b=globalThis.${BRIDGE_GLOBALS.bridge};delete globalThis.${BRIDGE_GLOBALS.bridge};return b})();`;

/**
 * Bundles `prelude/index.ts` into a minified IIFE (ES2023; esbuild keeps the modules' strict mode)
 * followed by one statement whose value is the prelude's bridge function, and returns its text.
 * Throws `ChainRuntimeError` `SANDBOX_FAILED` when esbuild fails.
 */
export function buildPreludeBundle(): string {
  try {
    // Loaded on first build only: a process handed the built prelude (a sandbox child) never
    // pays for importing esbuild.
    const { buildSync } = createRequire(import.meta.url)("esbuild") as { buildSync: typeof BuildSync };
    const result = buildSync({
      entryPoints: [fileURLToPath(SOURCE_ENTRY)],
      bundle: true,
      format: "iife",
      minify: true,
      target: "es2023",
      platform: "neutral",
      write: false,
      legalComments: "none",
      footer: { js: TAKE_BRIDGE },
    });
    const file = result.outputFiles[0];
    if (file === undefined) throw new Error("esbuild produced no output");
    return file.text;
  } catch (error) {
    throw new ChainRuntimeError("SANDBOX_FAILED", `Could not build the sandbox prelude: ${String(error)}`, { cause: error });
  }
}

/**
 * The prelude source to run in every fresh context; built once, then served from memory.
 * Throws `ChainRuntimeError` `SANDBOX_FAILED` when neither the source nor a prebuilt bundle is
 * found, or when the build fails.
 */
export function getPreludeSource(): string {
  if (cached !== undefined) return cached;
  if (existsSync(SOURCE_ENTRY)) cached = buildPreludeBundle();
  else if (existsSync(PREBUILT)) cached = readFileSync(PREBUILT, "utf8");
  else {
    throw new ChainRuntimeError("SANDBOX_FAILED", "The sandbox prelude is missing: neither prelude/index.ts nor prelude.js was found.", {
      details: { source: fileURLToPath(SOURCE_ENTRY), prebuilt: fileURLToPath(PREBUILT) },
    });
  }
  return cached;
}
