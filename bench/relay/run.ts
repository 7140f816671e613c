import { readFileSync } from 'node:fs';
import { mkdtemp, readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatSummary, summarizeProfiles } from './cpu-profile.js';
import { type IdleRun, type MessageRun, runEcho, runFanOut, runFixedRate, runIdle } from './load.js';
import { clockTicksPerSecond, type ProcessSample, sampleProcess } from './process-stats.js';
import { formats, type Goal, type Row, renderSection, type ScenarioReport, writeSection } from './report.js';
import { startTarget, type Target, type TargetKind, targetLabels } from './targets.js';

/**
 * Relay benchmark: runs each scenario against the relay and the bare forwarder (each a
 * fresh child process), prints progress, and writes the figures to docs/benchmarks.md.
 *
 *   npm run bench                      full run (~2 min on 2 cores), writes the docs
 *   npm run bench -- --quick           ~25 s smoke run, prints the tables only
 *   npm run bench -- --profile         targets run under --cpu-prof; prints where their CPU went
 *   --only=a,c                         run only these scenarios (a fan-out, b fixed rate, c echo, d idle)
 *   --rounds=N                         rounds per target (default 2, quick 1)
 *   --docs / --no-docs                 force or skip writing docs/benchmarks.md
 */

const options = parseArgs();
const settings = options.quick
  ? { clients: 50, warmupMs: 500, measureMs: 2000, idleClients: 500, idleWarmup: 50, settleMs: 500 }
  : { clients: 100, warmupMs: 1500, measureMs: 5000, idleClients: 2000, idleWarmup: 100, settleMs: 1500 };
const fixedRate = 5000;
const fanOutWindow = 500;
const echoDepth = 2;
// Parent and target each hold one descriptor per idle client; stay well inside the open-file limit.
const idleClients = Math.max(100, Math.min(settings.idleClients, openFileLimit() - settings.idleWarmup - 256));

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const docsFile = path.join(repoRoot, 'docs/benchmarks.md');
const profileRoot = options.profile ? await mkdtemp(path.join(os.tmpdir(), 'hearth-relay-bench-profile-')) : undefined;
const startedAt = performance.now();

/** Runs one scenario against a fresh target of each kind, `rounds` times, alternating which goes first. */
async function eachTarget<T>(
  id: ScenarioId,
  run: (target: Target, sample: () => ProcessSample) => Promise<T>,
  describe: (result: T) => string,
  { inspect = false } = {},
): Promise<Record<TargetKind, T[]>> {
  const results: Record<TargetKind, T[]> = { relay: [], bare: [] };
  for (let round = 0; round < options.rounds; round += 1) {
    const order: TargetKind[] = round % 2 === 0 ? ['relay', 'bare'] : ['bare', 'relay'];
    for (const kind of order) {
      const profileDir = profileRoot ? path.join(profileRoot, `${id}-${kind}-${round + 1}`) : undefined;
      const target = await startTarget(kind, { profileDir, inspect });
      try {
        const result = await run(target, () => sampleProcess(target.pid));
        results[kind].push(result);
        progress(`(${id}) ${targetLabels[kind]} · round ${round + 1}/${options.rounds}: ${describe(result)}`);
      } finally {
        await target.stop();
      }
    }
  }
  return results;
}

const cpuGoal: Goal = { kind: 'ratio-at-most', value: 1.1 };
const none: Goal = { kind: 'none' };
const measured = `${seconds(settings.measureMs)} measured after ${seconds(settings.warmupMs)} warm-up.`;
const generatorShares: string[] = [];
const cpuRuns: MessageRun[] = [];

/** Each scenario runs its load against both targets and turns the results into its table. */
const scenarios: Record<ScenarioId, () => Promise<ScenarioReport>> = {
  async a() {
    const results = await eachTarget(
      'a',
      (target, sample) =>
        runFanOut(target, { ...windowOf(settings), clients: settings.clients, window: fanOutWindow }, sample),
      (run) => `${formats.rate(run.ratePerSecond)}, ${formats.micros(cpuPerMessage(run))} CPU/msg, ${generator(run)}`,
    );
    noteGenerator('fan-out', results);
    return {
      title: '(a) Downstream fan-out',
      setup:
        `The backend sends relay.server.event to ${settings.clients} clients round-robin as fast as they are ` +
        `delivered, at most ${fanOutWindow} messages in flight; clients only count. ${measured}`,
      rows: [
        row('Delivered', results, (run) => run.ratePerSecond, 'max', formats.rate, none),
        row('CPU per message', results, cpuPerMessage, 'min', formats.micros, cpuGoal),
      ],
    };
  },
  async b() {
    const results = await eachTarget(
      'b',
      (target, sample) =>
        runFixedRate(target, { ...windowOf(settings), clients: settings.clients, ratePerSecond: fixedRate }, sample),
      (run) =>
        `p50 ${formats.millis(percentile(run.latenciesMs, 0.5))}, p99 ${formats.millis(percentile(run.latenciesMs, 0.99))}, ` +
        `${formats.micros(cpuPerMessage(run))} CPU/msg, ${run.lost} lost, ${generator(run)}`,
    );
    noteGenerator('fixed rate', results);
    return {
      title: `(b) Fixed rate, ${fixedRate.toLocaleString('en-US')} msg/s`,
      setup:
        `The backend sends ${fixedRate.toLocaleString('en-US')} relay.server.event per second round-robin to ` +
        `${settings.clients} clients, each event carrying its send time; latency is send → delivery, measured in ` +
        `the load generator. ${measured}`,
      rows: [
        row('Latency p50', results, (run) => percentile(run.latenciesMs, 0.5), 'min', formats.millis, none),
        row('Latency p99', results, (run) => percentile(run.latenciesMs, 0.99), 'min', formats.millis, {
          kind: 'ratio-at-most',
          value: 1.5,
        }),
        row('CPU per message', results, cpuPerMessage, 'min', formats.micros, cpuGoal),
        // Shows the generator kept to the schedule, so the latencies are those of the stated rate.
        row('Delivered in the window', results, (run) => run.ratePerSecond, 'max', formats.rate, none),
        // The worst round, unlike the other figures: a loss anywhere matters.
        row('Messages lost', results, (run) => run.lost, 'max', formats.count, none),
      ],
    };
  },
  async c() {
    const results = await eachTarget(
      'c',
      (target, sample) =>
        runEcho(target, { ...windowOf(settings), clients: settings.clients, depth: echoDepth }, sample),
      (run) =>
        `${formats.rate(run.ratePerSecond)} round trips, p99 ${formats.millis(percentile(run.latenciesMs, 0.99))}, ` +
        `${formats.micros(cpuPerMessage(run))} CPU/msg, ${generator(run)}`,
    );
    noteGenerator('echo', results);
    return {
      title: '(c) Client → backend echo',
      setup:
        `${settings.clients} clients each keep ${echoDepth} messages in flight; the backend parses each ` +
        `relay.client.event and sends its event back to the sender. A round trip is two relayed messages. ${measured}`,
      rows: [
        row('Round trips', results, (run) => run.ratePerSecond, 'max', formats.rate, none),
        row('Round-trip latency p50', results, (run) => percentile(run.latenciesMs, 0.5), 'min', formats.millis, none),
        row('Round-trip latency p99', results, (run) => percentile(run.latenciesMs, 0.99), 'min', formats.millis, none),
        row('CPU per relayed message', results, cpuPerMessage, 'min', formats.micros, cpuGoal),
      ],
    };
  },
  async d() {
    const results = await eachTarget(
      'd',
      (target, sample) =>
        runIdle(
          target,
          {
            clients: idleClients,
            warmupClients: settings.idleWarmup,
            settleMs: settings.settleMs,
            collectGarbage: () => target.collectGarbage(),
          },
          sample,
        ),
      (run) =>
        `${formats.kilobytes(bytesPerConnection(run))} per connection ` +
        `(RSS ${mb(run.rssBeforeBytes)} → ${mb(run.rssAfterBytes)}), ` +
        `${formats.micros(run.targetCpuMicros / run.connections)} CPU per connection`,
      // The inspector is how the scenario forces a GC before each memory reading.
      { inspect: true },
    );
    const count = idleClients.toLocaleString('en-US');
    return {
      title: '(d) Idle connections',
      setup:
        `${count} clients connect (after ${settings.idleWarmup} warm-up clients, which stay) and stay silent; ` +
        `memory is the growth of the target's VmRSS (median of 5 readings, each after a full GC forced through ` +
        `the inspector, ${seconds(settings.settleMs)} after connecting) divided by ${count}.`,
      rows: [
        // The mean: allocator and GC timing move an RSS difference both ways, unlike CPU interference.
        row('Memory per idle connection', results, bytesPerConnection, 'mean', formats.kilobytes, {
          kind: 'relay-below',
          value: 8 * 1024,
          text: '< 8 KB',
        }),
        row(
          'CPU per connection opened',
          results,
          (run) => run.targetCpuMicros / run.connections,
          'min',
          formats.micros,
          none,
        ),
      ],
    };
  },
};

const machine = describeMachine();
progress(`${options.quick ? 'quick' : 'full'} run of ${options.only.join(', ')} on ${machine}`);
const reports: ScenarioReport[] = [];
for (const id of options.only) reports.push(await scenarios[id]());

const notes = [
  ...(generatorShares.length > 0
    ? [
        `Load generator CPU (share of one core; relay rounds / bare forwarder rounds): ${generatorShares.join('; ')}. ` +
          'Near 100 % the generator, not the target, bounds msg/s; CPU per message stays comparable.',
      ]
    : []),
  `CPU time is counted in clock ticks of ${(1000 / clockTicksPerSecond).toFixed(0)} ms; rounding to ticks moves ` +
    `no CPU-per-message figure above by more than ${tickError(cpuRuns).toFixed(1)} %.`,
  'The machine was shared with other work while this ran; expect noise between runs, most of all in p99 latency.',
];
const section = renderSection(
  {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    mode: options.quick ? 'quick (`--quick`)' : 'full',
    machine,
    rounds: options.rounds,
  },
  reports,
  notes,
);
process.stdout.write(`\n${section}\n\n`);
if (options.writeDocs) {
  await writeSection(docsFile, section);
  progress(`wrote ${path.relative(repoRoot, docsFile)}`);
}
if (profileRoot) {
  for (const run of (await readdir(profileRoot)).sort()) {
    for (const summary of await summarizeProfiles(path.join(profileRoot, run))) {
      process.stdout.write(`${formatSummary(summary)}\n\n`);
    }
  }
}
progress(`done in ${((performance.now() - startedAt) / 1000).toFixed(0)} s`);

// Helpers below: derived figures, best-of-rounds selection and formatting.

function windowOf(values: { warmupMs: number; measureMs: number }) {
  return { warmupMs: values.warmupMs, measureMs: values.measureMs };
}

function cpuPerMessage(run: MessageRun): number {
  return run.messages > 0 ? run.targetCpuMicros / run.messages : Number.NaN;
}

function bytesPerConnection(run: IdleRun): number {
  return (run.rssAfterBytes - run.rssBeforeBytes) / run.connections;
}

/** Nearest-rank percentile, in the unit of `values`. */
function percentile(values: number[], fraction: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(fraction * sorted.length)));
  return sorted[rank - 1] ?? Number.NaN;
}

/** The best figure of the rounds for each target (interference only ever makes CPU and latency worse), or their mean. */
function row<T>(
  metric: string,
  results: Record<TargetKind, T[]>,
  figure: (run: T) => number,
  better: 'min' | 'max' | 'mean',
  format: (value: number) => string,
  goal: Goal,
): Row {
  const best = (runs: T[]) => {
    const values = runs.map(figure).filter((value) => !Number.isNaN(value));
    if (values.length === 0) return Number.NaN;
    if (better === 'mean') return values.reduce((sum, value) => sum + value, 0) / values.length;
    return better === 'min' ? Math.min(...values) : Math.max(...values);
  };
  return { metric, relay: best(results.relay), bare: best(results.bare), format, goal };
}

/** Worst-case share of a window's CPU figure that tick rounding (one tick at each edge) could account for, in %. */
function tickError(runs: MessageRun[]): number {
  const tickMicros = 1e6 / clockTicksPerSecond;
  return Math.max(0, ...runs.map((run) => ((2 * tickMicros) / Math.max(run.targetCpuMicros, 1)) * 100));
}

function generator(run: MessageRun): string {
  return `generator ${formats.share(run.generatorCoreShare)} of a core`;
}

/** Keeps the generator's CPU share and the runs' CPU windows for the notes under the tables. */
function noteGenerator(scenario: string, results: Record<TargetKind, MessageRun[]>): void {
  const list = (runs: MessageRun[]) => runs.map((run) => formats.share(run.generatorCoreShare)).join(', ');
  generatorShares.push(`${scenario} ${list(results.relay)} / ${list(results.bare)}`);
  cpuRuns.push(...results.relay, ...results.bare);
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(ms % 1000 === 0 ? 0 : 1)} s`;
}

function mb(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MB`;
}

function progress(message: string): void {
  const elapsed = ((performance.now() - startedAt) / 1000).toFixed(0).padStart(4);
  process.stdout.write(`[relay-bench ${elapsed}s] ${message}\n`);
}

function describeMachine(): string {
  const cpu = os.cpus()[0]?.model.trim() ?? 'unknown CPU';
  const load = os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
  return (
    `${os.availableParallelism()} CPUs (nproc) × ${cpu}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GB RAM, ` +
    `Linux ${os.release()}, Node ${process.version}, load average ${load} at start`
  );
}

type ScenarioId = 'a' | 'b' | 'c' | 'd';

function parseArgs() {
  const all: ScenarioId[] = ['a', 'b', 'c', 'd'];
  let quick = false;
  let profile = false;
  let docs: boolean | undefined;
  let only = all;
  let rounds: number | undefined;
  for (const arg of process.argv.slice(2)) {
    const [name, value] = arg.split('=', 2);
    if (name === '--quick') quick = true;
    else if (name === '--profile') profile = true;
    else if (name === '--docs') docs = true;
    else if (name === '--no-docs') docs = false;
    else if (name === '--only' && value) only = all.filter((id) => value.split(',').includes(id));
    else if (name === '--rounds' && value && Number(value) >= 1) rounds = Math.floor(Number(value));
    else {
      process.stderr.write(`unknown option ${arg}; see the top of bench/relay/run.ts\n`);
      process.exit(2);
    }
  }
  // Quick, partial and profiled runs give rougher, incomplete or distorted figures: they do
  // not replace the documented ones unless asked to.
  const complete = !quick && !profile && only.length === all.length;
  return { quick, profile, only, rounds: rounds ?? (quick ? 1 : 2), writeDocs: docs ?? complete };
}

/** The soft open-file limit of this process (`ulimit -n`), which the targets inherit. */
function openFileLimit(): number {
  try {
    const limits = readFileSync('/proc/self/limits', 'utf8');
    const match = /^Max open files\s+(\d+|unlimited)/m.exec(limits);
    if (!match?.[1] || match[1] === 'unlimited') return Number.POSITIVE_INFINITY;
    return Number(match[1]);
  } catch {
    return 1024;
  }
}
