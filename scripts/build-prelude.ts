/**
 * The second half of `npm run build`: writes the prelude bundle to `dist/prelude.js`, where the
 * built `sandbox/prelude-bundle.js` reads it (a published package ships no `prelude/` sources).
 * @module
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { buildPreludeBundle } from "../sandbox/prelude-bundle.ts";

const target = new URL("../dist/prelude.js", import.meta.url);
mkdirSync(new URL("./", target), { recursive: true });
writeFileSync(target, buildPreludeBundle());
process.stdout.write(`wrote ${target.pathname}\n`);
