import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Summarizes the `.cpuprofile` files `node --cpu-prof` writes (run.ts `--profile`): where a
 * target's CPU went, by function (self time) and by file, so a gap to the bare forwarder
 * can be traced to the code responsible without opening a profiler.
 */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  file: string;
  /** Sampled time in µs, idle excluded. */
  busyMicros: number;
  topFunctions: Array<{ name: string; micros: number }>;
  topFiles: Array<{ name: string; micros: number }>;
}

export async function summarizeProfiles(directory: string, top = 15): Promise<ProfileSummary[]> {
  const files = (await readdir(directory)).filter((name) => name.endsWith('.cpuprofile'));
  const summaries: ProfileSummary[] = [];
  for (const file of files) {
    const profile = JSON.parse(await readFile(path.join(directory, file), 'utf8')) as CpuProfile;
    summaries.push(summarize(path.join(directory, file), profile, top));
  }
  return summaries;
}

function summarize(file: string, profile: CpuProfile, top: number): ProfileSummary {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, index) => {
    const node = nodes.get(id);
    const delta = profile.timeDeltas[index] ?? 0;
    if (!node || node.callFrame.functionName === '(idle)') return;
    busy += delta;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = shortUrl(url);
    const name = `${functionName || '(anonymous)'}${where ? ` ${where}:${lineNumber + 1}` : ''}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + delta);
    const fileKey = where || functionName;
    byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + delta);
  });
  const ranked = (map: Map<string, number>) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, micros]) => ({ name, micros }));
  return { file, busyMicros: busy, topFunctions: ranked(byFunction), topFiles: ranked(byFile) };
}

/** The part of a script URL that identifies it: node_modules/<package>/…, packages/…, or node:… as is. */
function shortUrl(url: string): string {
  if (!url) return '';
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) return url.slice(modules + 'node_modules/'.length);
  const packages = url.indexOf('/packages/');
  if (packages >= 0) return url.slice(packages + 1);
  const bench = url.indexOf('/bench/');
  if (bench >= 0) return url.slice(bench + 1);
  return url.replace(/^file:\/\//, '');
}

export function formatSummary(summary: ProfileSummary): string {
  const percent = (micros: number) => `${((micros / Math.max(summary.busyMicros, 1)) * 100).toFixed(1).padStart(5)} %`;
  return [
    `${summary.file} — ${(summary.busyMicros / 1e6).toFixed(2)} s busy`,
    '  self time by function:',
    ...summary.topFunctions.map((entry) => `    ${percent(entry.micros)}  ${entry.name}`),
    '  self time by file:',
    ...summary.topFiles.map((entry) => `    ${percent(entry.micros)}  ${entry.name}`),
  ].join('\n');
}
