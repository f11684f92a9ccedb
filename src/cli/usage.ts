/** The help text of `isochain`. */
export const USAGE = `Usage:
  isochain run <script.ts> --tools <module.ts> [options]
  isochain trace ls [--limit N] [--json]
  isochain trace show <id|file.trace> [--json]
  isochain trace export <id|file.trace> [--test [--import SPEC]] [--out FILE]
  isochain replay <id|file.trace> [--json]             strict: same calls, same result (no tools needed)
  isochain replay <id|file.trace> --resume --tools <module.ts> [--in-doubt cN=assume-done|re-execute]
                  [--decision approved|denied|skipped] [--approve MODE] [--force] [--json]

Options for run:
  --tools <module>        module exporting the tools (named exports, a Toolbox, or an array)
  --approve <mode>        auto | deny | prompt | suspend (default: prompt on a terminal, else deny);
                          suspend ends the run "suspended" and prints how to resume it
  --max-calls <n>         tool-call budget (default 50)
  --no-trace              do not write a trace
  --json                  print the ChainRunResult as JSON

Common options:
  --store <dir>           where artifacts and traces are kept (default .isochain; traces in <dir>/traces)
  -h, --help              this text`;
