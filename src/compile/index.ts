/**
 * The compile step: model-written TypeScript → the code a sandbox evaluates, with source
 * positions mapped back for errors and stacks.
 * @module
 */
export * from "./code-frame.ts";
export * from "./compile-cache.ts";
export * from "./compile-script.ts";
export * from "./compiled-script-contract.ts";
export * from "./decode-source-map-mappings.ts";
export * from "./display-width.ts";
export * from "./line-index.ts";
export * from "./map-runtime-error.ts";
export * from "./scan-script.ts";
export * from "./source-position-mapper.ts";
