// One linter for the whole tree. The import rules encode the project's dependency direction:
// kernel <- toolbox/skills/artifacts/approval/bridge/compile/trace <- invoker <- manager; kernel + bridge <- sandbox;
// all of them <- chain <- cli (through the public entry, src/index.ts).
import tseslint from "typescript-eslint";

const nodeOnly = ["node:*", "fs", "path", "os", "child_process", "net", "crypto", "util", "worker_threads"];

/** Packages only one layer may import, banned everywhere under src/ but there. */
const heavyPackages = [
  { name: "isolated-vm", message: "Only sandbox/ may import isolated-vm." },
  { name: "fastify", message: "Only src/server/ may import fastify." },
];

export default tseslint.config(
  { ignores: ["node_modules/", "dist/", "coverage/", ".isochain/", "benchmarks/results/", "test/fixtures/**/*.d.ts"] },
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2024, sourceType: "module" },
    rules: {
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "no-restricted-imports": [
        "error",
        {
          paths: [
            { name: "isolated-vm", message: "Only sandbox/ may import isolated-vm: isolation details stay behind the SandboxDriver contract." },
            { name: "fastify", message: "Only src/server/ may import fastify: the root entry must stay light." },
          ],
        },
      ],
    },
  },
  {
    files: ["sandbox/**/*.ts", "benchmarks/**/*.ts", "test/**/*.ts"],
    rules: { "no-restricted-imports": "off" },
  },
  {
    files: ["sandbox/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "^(\\.\\./)+src/(?!kernel/|bridge/)",
              message: "The sandbox knows the kernel's types and the bridge's frames only: never the invoker, the chain runtime or the CLI.",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["src/kernel/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            { group: ["../*", "!./*"], message: "The kernel imports nothing of ours: it is the vocabulary every other layer shares." },
          ],
          paths: [{ name: "isolated-vm", message: "The kernel is pure." }],
        },
      ],
    },
  },
  {
    files: ["prelude/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            { regex: "^\\.\\./src/(?!bridge/protocol\\.ts$)", message: "The prelude runs inside the isolate: it may import only src/bridge/protocol.ts." },
            { group: nodeOnly, message: "The prelude runs inside the isolate: no Node modules exist there." },
          ],
        },
      ],
    },
  },
  {
    files: ["src/**/*.ts"],
    ignores: ["src/kernel/**", "src/chain/**", "src/cli/**", "src/index.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: heavyPackages,
          patterns: [
            { group: ["**/sandbox/*", "**/chain/*", "**/cli/*"], message: "Lower layers never import the chain runtime, the sandbox or the CLI." },
          ],
        },
      ],
    },
  },
  {
    files: ["src/{toolbox,skills,artifacts,approval,trace,compile,bridge}/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: heavyPackages,
          patterns: [
            {
              group: ["**/invoker/*", "**/manager/*", "**/sandbox/*", "**/chain/*", "**/cli/*"],
              message: "The tool, store, trace, compile and bridge layer sits under the invoker: it never imports the invoker, the manager or anything above them.",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["src/cli/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [{ name: "isolated-vm", message: "Only sandbox/ may import isolated-vm." }],
          // makeDirectory is a file-system helper, not API: mkdir -p that ends where Node's does not.
          patterns: [{ regex: "^\\.\\./(?!index\\.ts$|kernel/make-directory\\.ts$)", message: "The CLI uses only the public API: import from ../index.ts." }],
        },
      ],
    },
  },
);
