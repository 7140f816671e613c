import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { InspectorGc } from './inspector-gc.js';

/**
 * The two processes under test, each started fresh for every scenario so one scenario's
 * heap growth or JIT state cannot leak into the next one's CPU or memory figures:
 * the real relay (`hearth relay`, as deployed) and the bare forwarder from this folder.
 */

export type TargetKind = 'relay' | 'bare';

export const targetLabels: Record<TargetKind, string> = { relay: 'relay', bare: 'bare forwarder' };

export interface Target {
  kind: TargetKind;
  pid: number;
  /** ws://127.0.0.1:<port> */
  wsUrl: string;
  channelId: string;
  secret: string;
  /** Forces a full GC in the target; only for targets started with `inspect`. */
  collectGarbage(): Promise<void>;
  /** SIGTERM, then SIGKILL if it does not exit; removes its temporary storage. */
  stop(): Promise<void>;
}

export interface TargetOptions {
  /** When set, the target runs under `node --cpu-prof` and writes its profile here on exit. */
  profileDir?: string | undefined;
  /**
   * Starts the target with the inspector on a free loopback port so `collectGarbage` works.
   * Only the memory scenario asks for it; the message scenarios run without an inspector.
   */
  inspect?: boolean;
}

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const channelId = 'bench';
const adminToken = 'bench-admin-token-0123456789abcdef';
const startTimeoutMs = 20_000;

export async function startTarget(kind: TargetKind, options: TargetOptions = {}): Promise<Target> {
  const nodeArgs = options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.profileDir}`] : [];
  if (options.profileDir) await mkdir(options.profileDir, { recursive: true });
  if (options.inspect) nodeArgs.push('--inspect=127.0.0.1:0');
  const started = kind === 'relay' ? await startRelay(nodeArgs) : await startBare(nodeArgs);
  if (!options.inspect) return started;
  try {
    // Node prints the inspector's address on stderr before running any code, so it is there by now.
    const url = /Debugger listening on (ws:\/\/\S+)/.exec(started.output.text())?.[1];
    if (!url) throw new Error(`no inspector address from the ${kind}:\n${started.output.text()}`);
    const inspector = await InspectorGc.connect(url);
    return {
      ...started,
      collectGarbage: () => inspector.collect(),
      async stop() {
        inspector.close();
        await started.stop();
      },
    };
  } catch (error) {
    await started.stop();
    throw error;
  }
}

type StartedTarget = Target & { output: Output };

async function startRelay(nodeArgs: string[]): Promise<StartedTarget> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hearth-relay-bench-'));
  // With LOG_LEVEL=warn the relay does not log its 'relay listening' line, so the port is chosen here.
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HEARTH_DATA_DIR: dataDir,
    RELAY_PORT: String(port),
    RELAY_HOST: '127.0.0.1',
    RELAY_ADMIN_TOKEN: adminToken,
    // Limits that protect production would throttle the load generator; they are off, as the protocol notes ask.
    RELAY_CLIENT_MESSAGES_PER_MINUTE: '0',
    RELAY_MAX_CONNECTIONS_PER_IP: '0',
    LOG_LEVEL: 'warn',
  };
  // Local SQLite storage and the in-process bus: a shared database or Redis would measure the network instead.
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  const child = spawn(process.execPath, [...nodeArgs, path.join(repoRoot, 'packages/cli/bin/hearth.js'), 'relay'], {
    cwd: repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = captureOutput(child);
  const secret = randomBytes(16).toString('hex');
  const httpUrl = `http://127.0.0.1:${port}`;
  try {
    await waitFor(
      async () => {
        const response = await fetch(`${httpUrl}/api/channels`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-relay-admin-token': adminToken },
          body: JSON.stringify({ channelId, secret }),
        }).catch(() => undefined);
        if (response && !response.ok) throw new Error(`creating the channel failed: ${response.status}`);
        return response?.ok === true;
      },
      child,
      output,
    );
  } catch (error) {
    child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  return target('relay', child, output, `ws://127.0.0.1:${port}`, secret, async () => {
    await rm(dataDir, { recursive: true, force: true });
  });
}

async function startBare(nodeArgs: string[]): Promise<StartedTarget> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', ...nodeArgs, path.join(repoRoot, 'bench/relay/bare-forwarder.ts')],
    { cwd: repoRoot, env: { ...process.env, BARE_FORWARDER_PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const output = captureOutput(child);
  let port = 0;
  await waitFor(
    async () => {
      const match = /bare forwarder listening (\d+)/.exec(output.text());
      port = match?.[1] ? Number(match[1]) : 0;
      return port > 0;
    },
    child,
    output,
  ).catch((error: unknown) => {
    child.kill('SIGKILL');
    throw error;
  });
  return target('bare', child, output, `ws://127.0.0.1:${port}`, 'unchecked', async () => undefined);
}

function target(
  kind: TargetKind,
  child: ChildProcess,
  output: Output,
  wsUrl: string,
  secret: string,
  cleanup: () => Promise<void>,
): StartedTarget {
  const { pid } = child;
  if (pid === undefined) throw new Error(`${kind} did not start`);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  return {
    kind,
    pid,
    wsUrl,
    channelId,
    secret,
    output,
    collectGarbage: () => Promise.reject(new Error(`${kind} was not started with inspect`)),
    async stop() {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 8000);
      await exited;
      clearTimeout(killer);
      await cleanup();
    },
  };
}

/** Polls `ready` until it says yes, failing early with the child's output if the child exits. */
async function waitFor(ready: () => Promise<boolean>, child: ChildProcess, output: Output): Promise<void> {
  const deadline = Date.now() + startTimeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`target exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${output.text()}`);
    }
    if (await ready()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`target not ready within ${startTimeoutMs} ms:\n${output.text()}`);
}

/** Keeps the last few KB of a child's stdout and stderr for error messages, and keeps the pipes drained. */
interface Output {
  text(): string;
}

function captureOutput(child: ChildProcess): Output {
  let text = '';
  const append = (chunk: Buffer) => {
    text = (text + chunk.toString()).slice(-8192);
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  return { text: () => text };
}

/** A port free on 127.0.0.1 right now (the OS picks it); the target binds it a moment later. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
