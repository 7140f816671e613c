import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';

/**
 * Turns the figures into the relay's section of docs/benchmarks.md. The file is shared
 * with benchmarks of other services, so only the text between this benchmark's markers
 * is replaced; a missing file or section is created.
 */

export const sectionStart = '<!-- relay-bench:start -->';
export const sectionEnd = '<!-- relay-bench:end -->';

/** What a figure is compared with; reported, never asserted. */
export type Goal =
  | { kind: 'ratio-at-most'; value: number }
  | { kind: 'relay-below'; value: number; text: string }
  | { kind: 'none' };

export interface Row {
  metric: string;
  relay: number;
  bare: number;
  format: (value: number) => string;
  goal: Goal;
}

export interface ScenarioReport {
  title: string;
  /** What the load was, one or two sentences. */
  setup: string;
  rows: Row[];
}

export interface RunInfo {
  date: string;
  mode: string;
  machine: string;
  rounds: number;
}

const fileHeader = `# Benchmarks

Measurements of Hearth's services under synthetic load. Each section below is written by its
benchmark script between its own markers; rerun the script rather than editing the figures.
`;

export function renderSection(info: RunInfo, scenarios: ScenarioReport[], notes: string[]): string {
  const lines = [
    sectionStart,
    '## Relay',
    '',
    'Written by `npm run bench` (`bench/relay/run.ts`). The relay runs as it is deployed (`hearth relay`, SQLite',
    'storage, in-process bus, log level warn, per-client message limit and per-address connection limit off)',
    'in a child process; the reference is `bench/relay/bare-forwarder.ts`, a `ws` server in its own child',
    'process that does the least the protocol needs (hello → ack, relay.client.open, wrap client messages as',
    'relay.client.event, unwrap relay.server.event) with no auth, storage, metrics, limits or heartbeat.',
    'One load-generator process (the parent) plays one backend and N clients over 127.0.0.1 against both',
    'with identical code. Each scenario starts a fresh target, warms it up, then measures a window. CPU is',
    "the target's utime + stime from `/proc/<pid>/stat` over that window, divided by the messages it relayed",
    '(an echo round trip counts as two); memory is the VmRSS growth from `/proc/<pid>/status` while idle',
    'clients connect, divided by their number, each reading taken after a full GC (the memory scenario starts',
    `its target with \`--inspect\` to force one). Each figure is the best of ${info.rounds} round(s) per target`,
    '(relay and bare forwarder alternating), since interference from other processes only makes figures worse;',
    'memory, which noise moves both ways, is the mean of the rounds, and messages lost the worst round.',
    'Ratios are relay / bare forwarder. Targets are goals to report against, not assertions.',
    '',
    `- Date: ${info.date}`,
    `- Mode: ${info.mode}`,
    `- Machine: ${info.machine}`,
    '',
  ];
  for (const scenario of scenarios) {
    lines.push(`### ${scenario.title}`, '', scenario.setup, '');
    const cells = scenario.rows.map((row) => [
      row.metric,
      row.format(row.relay),
      row.format(row.bare),
      row.bare > 0 ? `${(row.relay / row.bare).toFixed(2)}×` : '–',
      goalText(row.goal),
      goalMet(row),
    ]);
    lines.push(...table(['Metric', 'Relay', 'Bare forwarder', 'Ratio', 'Target', 'Met?'], cells), '');
  }
  if (notes.length > 0) {
    lines.push('Notes:', '', ...notes.map((note) => `- ${note}`), '');
  }
  lines.push(sectionEnd);
  return lines.join('\n');
}

const rightAligned = [false, true, true, true, false, false];

/**
 * A Markdown table padded the way the repository's formatter (Biome) writes one, so
 * `npm run lint` accepts the generated file as it is.
 */
function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((title, column) =>
    Math.max(title.length, 3, ...rows.map((cells) => (cells[column] ?? '').length)),
  );
  const line = (cells: string[]) =>
    `| ${cells.map((cell, column) => (rightAligned[column] ? cell.padStart(widths[column] ?? 0) : cell.padEnd(widths[column] ?? 0))).join(' | ')} |`;
  const rule = widths.map((width, column) => (rightAligned[column] ? `${'-'.repeat(width - 1)}:` : '-'.repeat(width)));
  return [line(header), `| ${rule.join(' | ')} |`, ...rows.map(line)];
}

function goalText(goal: Goal): string {
  switch (goal.kind) {
    case 'ratio-at-most':
      return `≤ ${goal.value}× bare`;
    case 'relay-below':
      return goal.text;
    case 'none':
      return '–';
  }
}

function goalMet(row: Row): string {
  const { goal } = row;
  switch (goal.kind) {
    case 'ratio-at-most':
      return row.bare > 0 && row.relay / row.bare <= goal.value ? 'yes' : 'no';
    case 'relay-below':
      return row.relay < goal.value ? 'yes' : 'no';
    case 'none':
      return '';
  }
}

/** Replaces the relay section of `file` (or appends it), leaving the rest of the file as it was. */
export async function writeSection(file: string, section: string): Promise<void> {
  const current = existsSync(file) ? await readFile(file, 'utf8') : fileHeader;
  const start = current.indexOf(sectionStart);
  const end = current.indexOf(sectionEnd);
  const next =
    start >= 0 && end > start
      ? `${current.slice(0, start)}${section}${current.slice(end + sectionEnd.length)}`
      : `${current.trimEnd()}\n\n${section}\n`;
  await writeFile(file, next);
}

export const formats = {
  rate: (value: number) => `${Math.round(value).toLocaleString('en-US')} msg/s`,
  micros: (value: number) => `${value.toFixed(1)} µs`,
  millis: (value: number) => `${value.toFixed(2)} ms`,
  kilobytes: (value: number) => `${(value / 1024).toFixed(2)} KB`,
  share: (value: number) => `${Math.round(value * 100)} %`,
  count: (value: number) => Math.round(value).toLocaleString('en-US'),
};
