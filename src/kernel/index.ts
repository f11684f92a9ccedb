/**
 * The kernel: isochain's vocabulary. Types, frozen defaults and pure helpers; imports nothing
 * from the rest of the project.
 * @module
 */
export * from "./approval.ts";
export * from "./artifact-ref.ts";
export * from "./blob-store.ts";
export * from "./canonical-json.ts";
export * from "./chain-policy.ts";
export * from "./chain-run.ts";
export * from "./content.ts";
export * from "./errors.ts";
export * from "./escape-terminal-text.ts";
export * from "./hooks.ts";
export * from "./invocation.ts";
export * from "./json-schema.ts";
export * from "./tool.ts";
export * from "./tool-risk.ts";
