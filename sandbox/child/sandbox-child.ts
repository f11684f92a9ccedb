/**
 * Entry point of a sandbox child process, started by the process driver as
 * `node --no-node-snapshot sandbox-child.{ts,js}` with the host pipe on fd 3.
 *
 * It turns on Node's module compile cache (in Node's default place, `<tmpdir>/node-compile-cache`,
 * unless `NODE_COMPILE_CACHE` names another or `NODE_DISABLE_COMPILE_CACHE` is set) before
 * loading the rest, so later children skip most of the parsing and type stripping: measured
 * ~245 ms → ~95 ms of module loading per child from the source tree.
 * @module
 */
import { enableCompileCache } from "node:module";

try {
  enableCompileCache();
} catch {
  // a read-only or missing tmpdir only costs start-up time
}
await import("./child-main.ts");
