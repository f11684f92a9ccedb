/**
 * `npm run bench [-- options]`: runs the suite, prints a table per group and writes JSON.
 *
 *   --quick            smoke run (< 30 s; CI runs it; figures indicative only)
 *   --filter <text>    only some scenarios/probes (repeatable). <text> selects a group by its
 *                      name (`chain`), a runner (`isochain`, `raw-ivm`), or any scenario whose
 *                      path after the `/` contains it (`one-call`, `sustained`); with a `/` in
 *                      it, any name containing it (`isochain/one`). Baselines always come along.
 *   --soak             also run the soak probe (10 000 chains; 1 000 with --quick)
 *   --json <path>      where to write the results @defaultValue benchmarks/results/latest.json
 *   --list             list scenarios and probes, run nothing
 *   --fail-on-error    exit 1 when a scenario or probe was skipped, failed or ran in part (CI's smoke run:
 *                      a broken path must not pass as "no figure")
 *
 * Exits 0 whatever the figures (no timing assertions); 1 for bad options, a filter that
 * matches nothing, or (with --fail-on-error) a scenario or probe that did not run.
 * @module
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import chainNewScript from "./chain-new-script.bench.ts";
import chainOneCall from "./chain-one-call.bench.ts";
import chainParallel from "./chain-parallel.bench.ts";
import chainSequential from "./chain-sequential.bench.ts";
import compile from "./compile.bench.ts";
import cpuBound from "./cpu-bound.bench.ts";
import {
  type BenchFile,
  computeDerived,
  describe,
  filterMatches,
  type FigureResult,
  formatBytes,
  formatRate,
  formatTime,
  FULL_SETTINGS,
  notRunSummary,
  type Probe,
  probeResult,
  type ProbeResult,
  QUICK_SETTINGS,
  runGroup,
  type Scenario,
} from "./harness.ts";
import invokerOverhead from "./invoker-overhead.bench.ts";
import idlePenalty from "./idle-penalty.bench.ts";
import largeResult from "./large-result.bench.ts";
import memory from "./memory.bench.ts";
import sandboxAcquire from "./sandbox-acquire.bench.ts";
import throughput from "./throughput.bench.ts";

/** Every bench file, in the order groups are run and printed. */
const FILES: readonly BenchFile[] = [
  idlePenalty,
  sandboxAcquire,
  compile,
  chainOneCall,
  chainSequential,
  chainParallel,
  chainNewScript,
  largeResult,
  cpuBound,
  invokerOverhead,
  throughput,
  memory,
];

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

function parseOptions(): { quick: boolean; soak: boolean; list: boolean; failOnError: boolean; filters: string[]; json: string } {
  try {
    const { values } = parseArgs({
      options: {
        quick: { type: "boolean", default: false },
        soak: { type: "boolean", default: false },
        list: { type: "boolean", default: false },
        "fail-on-error": { type: "boolean", default: false },
        filter: { type: "string", multiple: true, default: [] },
        json: { type: "string", default: resolve(ROOT, "benchmarks/results/latest.json") },
      },
      strict: true,
      allowPositionals: false,
    });
    return {
      quick: values.quick,
      soak: values.soak,
      list: values.list,
      failOnError: values["fail-on-error"],
      filters: values.filter,
      json: resolve(values.json),
    };
  } catch (error) {
    process.stderr.write(`bench: ${describe(error)}\nusage: npm run bench -- [--quick] [--soak] [--filter <text>]... [--json <path>] [--list] [--fail-on-error]\n`);
    process.exit(1);
  }
}

function selectScenarios(all: readonly Scenario[], filters: readonly string[]): Scenario[] {
  if (filters.length === 0) return [...all];
  const byName = new Map(all.map((s) => [s.name, s]));
  const chosen = new Set(all.filter((s) => filters.some((f) => filterMatches(f, s.name, s.group))).map((s) => s.name));
  // Pull in the baselines (and theirs) so every ratio can be computed.
  for (const name of [...chosen]) {
    let base = byName.get(name)?.baseline;
    while (base !== undefined && !chosen.has(base) && byName.has(base)) {
      chosen.add(base);
      base = byName.get(base)?.baseline;
    }
  }
  return all.filter((s) => chosen.has(s.name));
}

function machine(): Record<string, string | number> {
  const cpus = os.cpus();
  let commit = "none (no commits yet)";
  try {
    commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, stdio: ["ignore", "pipe", "ignore"] }).toString().trim();
    const dirty = execFileSync("git", ["status", "--porcelain"], { cwd: ROOT, stdio: ["ignore", "pipe", "ignore"] }).toString().trim();
    if (dirty !== "") commit += "+dirty";
  } catch {
    // not a git checkout, or no commit yet
  }
  let ivm = "unknown";
  try {
    ivm = (JSON.parse(readFileSync(resolve(ROOT, "node_modules/isolated-vm/package.json"), "utf8")) as { version: string }).version;
  } catch {
    // not installed where expected
  }
  return {
    cpu: cpus[0]?.model ?? "unknown",
    cores: cpus.length,
    memory: `${Math.round(os.totalmem() / 1024 ** 3)} GiB`,
    os: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    isolatedVm: ivm,
    commit,
  };
}

function pad(text: string, width: number, right = false): string {
  return right ? text.padStart(width) : text.padEnd(width);
}

function printFigures(results: readonly FigureResult[]): void {
  const nameWidth = Math.max(34, ...results.map((r) => r.name.length + 2));
  process.stdout.write(
    `${pad("scenario", nameWidth)}${pad("median", 13, true)}${pad("p99", 13, true)}${pad("n", 9, true)}  ${pad("vs baseline", 38)}${pad("target", 13)}\n`,
  );
  for (const r of results) {
    if (r.stats === undefined) {
      process.stdout.write(`${pad(r.name, nameWidth)}${r.status}: ${r.reason ?? "no figure"}\n`);
      continue;
    }
    const fmt = r.report === "rate" ? formatRate : formatTime;
    const ratio = r.ratio === undefined ? (r.baseline === undefined ? "" : `— (${r.baseline} missing)`) : `${r.ratio.toFixed(2)}× ${r.baseline ?? ""}`;
    const target = r.target === undefined ? "" : `${r.target.label} ${r.met === true ? "✓ met" : r.met === false ? "✗ MISSED" : ""}`;
    const n = r.kind === "derived" ? "derived" : String(r.stats.samples);
    process.stdout.write(
      `${pad(r.name, nameWidth)}${pad(fmt(r.stats.medianNs), 13, true)}${pad(r.kind === "derived" ? "—" : fmt(r.stats.p99Ns), 13, true)}${pad(n, 9, true)}  ${pad(ratio, 38)}${target}\n`,
    );
  }
}

function printProbe(result: ProbeResult): void {
  process.stdout.write(`\n== ${result.name} ==\n`);
  if (result.status === "failed") {
    process.stdout.write(`failed: ${result.reason ?? ""}\n`);
    return;
  }
  if (result.status === "partial") process.stdout.write(`partial: ${result.reason ?? ""}\n`);
  for (const f of result.figures) {
    if (f.note !== undefined) {
      process.stdout.write(`${pad(f.name, 44)}${f.note}\n`);
      continue;
    }
    const value = f.unit === "bytes" ? formatBytes(f.value) : f.value.toFixed(0);
    const base = f.baselineValue === undefined ? "" : `raw-ivm ${f.unit === "bytes" ? formatBytes(f.baselineValue) : f.baselineValue.toFixed(0)}`;
    const target = f.target === undefined ? "" : `${f.target.label} ${f.met === true ? "✓ met" : f.met === false ? "✗ MISSED" : ""}`;
    process.stdout.write(`${pad(f.name, 44)}${pad(value, 12, true)}  ${pad(base, 22)}${target}\n`);
  }
}

async function main(): Promise<number> {
  const options = parseOptions();
  const settings = options.quick ? QUICK_SETTINGS : FULL_SETTINGS;
  const allScenarios = FILES.flatMap((f) => f.scenarios ?? []);
  const allDerived = FILES.flatMap((f) => f.derived ?? []);
  const allProbes = FILES.flatMap((f) => f.probes ?? []);

  if (options.list) {
    // A space after each column even when a name fills it: the list is read by people and parsed by tests.
    for (const s of allScenarios) process.stdout.write(`${pad(s.group, 13)} ${pad(s.name, 37)} ${s.description ?? ""}\n`);
    for (const d of allDerived) process.stdout.write(`${pad(d.group, 13)} ${pad(d.name, 37)} ${d.description ?? ""} (derived)\n`);
    for (const p of allProbes) process.stdout.write(`${pad("probe", 13)} ${pad(p.name, 37)} ${p.description ?? ""}${p.soak ? " (--soak)" : ""}\n`);
    return 0;
  }

  const scenarios = selectScenarios(allScenarios, options.filters);
  const matches = (name: string, group = ""): boolean => options.filters.length === 0 || options.filters.some((f) => filterMatches(f, name, group));
  const probes = allProbes.filter((p: Probe) => matches(p.name, "memory") && (!p.soak || options.soak) && (!options.quick || p.quick !== false));
  if (scenarios.length === 0 && probes.length === 0) {
    process.stderr.write(`bench: no scenario or probe matches ${options.filters.map((f) => JSON.stringify(f)).join(", ")} (try --list)\n`);
    process.exit(1);
  }

  const info = machine();
  const started = performance.now();
  process.stdout.write(
    `isochain bench ${options.quick ? "(quick: indicative only) " : ""}— ${new Date().toISOString()}\n` +
      `${info.cpu} × ${info.cores}, ${info.memory}, ${info.os}, Node ${info.node}, isolated-vm ${info.isolatedVm}, commit ${info.commit}\n` +
      `figures per op: median, p99 (nearest rank), ratio = median / baseline median, same interleaved rounds\n`,
  );

  const groups = [...new Set(scenarios.map((s) => s.group))];
  const results: FigureResult[] = [];
  for (const group of groups) {
    process.stderr.write(`[${group}] running ${scenarios.filter((s) => s.group === group).length} scenarios…\n`);
    const groupResults = await runGroup(
      scenarios.filter((s) => s.group === group),
      { settings },
    );
    results.push(...groupResults);
  }
  const derived = computeDerived(
    allDerived.filter((d) => groups.includes(d.group)),
    results,
  ).filter((d) => d.status === "ok" || matches(d.name, d.group));

  for (const group of groups) {
    process.stdout.write(`\n== ${group} ==\n`);
    printFigures([...results.filter((r) => r.group === group), ...derived.filter((d) => d.group === group)]);
  }

  const probeResults: ProbeResult[] = [];
  for (const probe of probes) {
    process.stderr.write(`[${probe.name}] measuring…\n`);
    let result: ProbeResult;
    try {
      result = probeResult(probe.name, await probe.measure({ quick: options.quick }));
    } catch (error) {
      result = { name: probe.name, status: "failed", reason: describe(error), figures: [] };
    }
    probeResults.push(result);
    printProbe(result);
  }

  const seconds = (performance.now() - started) / 1000;
  process.stdout.write(`\ndone in ${seconds.toFixed(1)} s; results in ${options.json}\n`);
  mkdirSync(dirname(options.json), { recursive: true });
  writeFileSync(
    options.json,
    `${JSON.stringify(
      {
        date: new Date().toISOString(),
        mode: options.quick ? "quick" : "full",
        filters: options.filters,
        machine: info,
        settings,
        seconds,
        figures: [...results, ...derived],
        probes: probeResults,
      },
      null,
      2,
    )}\n`,
  );
  const notRun = notRunSummary([...results, ...probeResults]);
  if (options.failOnError && notRun !== undefined) {
    process.stderr.write(`bench: ${notRun}\n`);
    return 1;
  }
  return 0;
}

const exitCode = await main();
// Everything was closed in teardown; exit anyway so a stray handle in the runtime cannot hang CI.
process.exit(exitCode);
