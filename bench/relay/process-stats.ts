import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * What the benchmark reads about a target process from /proc (Linux only): CPU time and
 * resident memory. Reading /proc rather than instrumenting the target keeps the relay and
 * the bare forwarder untouched and measured the same way, load generator excluded.
 */

export interface ProcessSample {
  /** utime + stime of every thread of the process, in microseconds. */
  cpuMicros: number;
  /** Resident set size in bytes (VmRSS). */
  rssBytes: number;
  /** performance.now() when the sample was taken, in milliseconds. */
  at: number;
}

/** Kernel clock ticks per second, the unit of utime/stime; 100 on practically every Linux. */
export const clockTicksPerSecond = readClockTicks();

function readClockTicks(): number {
  try {
    const ticks = Number.parseInt(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim(), 10);
    return Number.isFinite(ticks) && ticks > 0 ? ticks : 100;
  } catch {
    return 100;
  }
}

/** CPU time used so far by `pid` (all threads), in microseconds; resolution is one clock tick (10 ms). */
export function readCpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Field 2 (comm) is in parentheses and may itself contain spaces or ')', so split after the last ')'.
  // What follows starts at field 3 (state); utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error(`unreadable /proc/${pid}/stat`);
  return ((utime + stime) * 1_000_000) / clockTicksPerSecond;
}

/** Resident memory of `pid` in bytes, from VmRSS in /proc/<pid>/status. */
export function readRssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  if (!match?.[1]) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(match[1]) * 1024;
}

export function sampleProcess(pid: number): ProcessSample {
  return { cpuMicros: readCpuMicros(pid), rssBytes: readRssBytes(pid), at: performance.now() };
}

/** CPU microseconds the load generator (this process) has used so far, for spotting a saturated generator. */
export function ownCpuMicros(): number {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}
