/** The help text of `isochain`. */
export const USAGE = `Usage:
  isochain run <script.ts> --tools <module.ts> [options]
  isochain trace ls [--limit N] [--json]
  isochain trace show <id|file.trace> [--json] [--out FILE]
  isochain trace export <id|file.trace> [--test [--import SPEC]] [--out FILE]
  isochain replay <id|file.trace> [--json]             strict: same calls, same result (no tools needed)
  isochain replay <id|file.trace> --resume --tools <module.ts> [--in-doubt cN=assume-done|re-execute]
                  [--decision approved|denied|skipped] [--approve MODE] [--force] [--json]
  isochain bench [--quick] [--filter TEXT]... [--soak] [--list] [--json FILE] [--fail-on-error]
                                                       the benchmark suite (a source checkout's; npm run bench)

Options for run:
  --tools <module>        module exporting the tools: a Toolbox or an array of tools as its default
                          export (or as \`tools\`), else every tool, Toolbox and array it exports
  --approve <mode>        auto | deny | prompt | suspend (default: prompt on a terminal, else deny);
                          suspend ends the run "suspended" and prints how to resume it
  --max-calls <n>         tool-call budget, 0 to 1000000 (default 50)
  --no-trace              do not write a trace
  --json                  print the ChainRunResult as JSON

Options for trace ls:
  --limit <n>             list the newest n traces, 1 to 1000000 (default: all)

Common options:
  --store <dir>           where artifacts and traces are kept (default .isochain; traces in <dir>/traces);
                          run and replay --resume create it, and stop if it cannot be written
  -h, --help              this text

Exit codes:
  0  done: the chain ended ok (run, replay --resume), the replay was identical, the trace command ran
  1  the chain ended in error, the replay diverged, or the run's trace is incomplete
  2  could not do what was asked: the command line is wrong, or a script, tool module, trace or
     store cannot be used (the message says which and how to fix it); also when output was lost
  3  the chain is suspended, waiting for an approval (run --approve suspend, replay --resume);
     continue it with replay <id> --resume --decision ...
  A closed output (isochain ... | head) ends the command quietly with its own code.`;
