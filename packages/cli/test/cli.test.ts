import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const hearthBin = fileURLToPath(new URL('../bin/hearth.js', import.meta.url));
const builtMain = fileURLToPath(new URL('../dist/main.js', import.meta.url));
/** Only a guard against a hang; a passing test never waits this long. */
const guardMs = 20_000;

const running = new Set<ChildProcess>();
const temporaryDirs: string[] = [];

before(() => {
  assert.ok(existsSync(builtMain), `${builtMain} is missing: run \`npx tsc -b\` (npm test does it in pretest)`);
});

after(async () => {
  for (const child of running) child.kill('SIGKILL');
  await Promise.all(temporaryDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('hearth start', () => {
  test('generates an admin token, prints it once, and keeps it across restarts', async () => {
    const dataDir = await temporaryDir();
    const env = { HEARTH_DATA_DIR: dataDir, RELAY_PORT: '0', RELAY_HOST: '127.0.0.1' };

    const first = startHearth(['start'], env);
    const listening = await first.waitForLog((line) => line.msg === 'relay listening', 'relay listening');
    const httpUrl = stringField(listening, 'http');
    assert.match(httpUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(new URL(httpUrl).port, '0');
    const announced = await first.waitForLog((line) => typeof line.adminToken === 'string', 'the generated token');
    const adminToken = stringField(announced, 'adminToken');
    assert.ok(adminToken.length >= 16, `token too short: ${adminToken}`);
    assert.equal(announced.adminUrl, `${httpUrl}/api/state`);

    const health = await fetch(`${httpUrl}/healthz`);
    assert.equal(health.status, 200);
    assert.equal(((await health.json()) as { ok?: unknown }).ok, true);
    assert.equal((await fetch(`${httpUrl}/api/state`)).status, 401);
    const state = await fetch(`${httpUrl}/api/state`, { headers: { 'x-relay-admin-token': adminToken } });
    assert.equal(state.status, 200);
    assert.equal(((await state.json()) as { ok?: unknown }).ok, true);

    assert.deepEqual(await first.terminate(), { code: 0, signal: null });

    const printed = await runHearth(['relay', 'token'], env);
    assert.equal(printed.code, 0, printed.stderr);
    assert.equal(printed.stdout, `${adminToken}\n`);

    const second = startHearth(['start'], env);
    const relisted = await second.waitForLog((line) => line.msg === 'relay listening', 'relay listening');
    await second.waitForLog(
      (line) => typeof line.msg === 'string' && line.msg.startsWith('relay admin token loaded from storage'),
      'the token-loaded notice',
    );
    assert.ok(!second.stdout.includes(adminToken), 'the stored token was printed again');
    assert.ok(!second.lines.some((line) => 'adminToken' in line));
    const secondUrl = stringField(relisted, 'http');
    const again = await fetch(`${secondUrl}/api/state`, { headers: { 'x-relay-admin-token': adminToken } });
    assert.equal(again.status, 200);
    assert.deepEqual(await second.terminate(), { code: 0, signal: null });
  });

  test('a port already in use exits 1 with the reason instead of hanging', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    try {
      const address = blocker.address();
      assert.ok(address && typeof address === 'object');
      const result = await runHearth(['start'], {
        HEARTH_DATA_DIR: await temporaryDir(),
        RELAY_PORT: String(address.port),
        RELAY_HOST: '127.0.0.1',
      });
      assert.equal(result.code, 1);
      assert.match(result.stderr, new RegExp(`^hearth: .*EADDRINUSE.*127\\.0\\.0\\.1:${address.port}`, 'm'));
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});

describe('hearth relay import', () => {
  test('imports the old relay config so a started relay serves its channels', async () => {
    const dataDir = await temporaryDir();
    const file = path.join(dataDir, 'relay-config.json');
    await writeFile(
      file,
      JSON.stringify({
        version: 1,
        channels: { home: { label: 'Home', secret: 'abc12345xyz', users: [{ senderId: 'u1', token: 'tok1' }] } },
      }),
    );
    const env = { HEARTH_DATA_DIR: dataDir, RELAY_PORT: '0', RELAY_HOST: '127.0.0.1' };

    const imported = await runHearth(['relay', 'import', file], env);
    assert.equal(imported.code, 0, imported.stderr);
    assert.match(imported.stdout, /^imported 1 channel\(s\) and 1 user\(s\) into /);

    const token = await runHearth(['relay', 'token'], env);
    assert.equal(token.code, 0, token.stderr);
    const adminToken = token.stdout.trim();

    const relay = startHearth(['start'], env);
    const listening = await relay.waitForLog((line) => line.msg === 'relay listening', 'relay listening');
    const response = await fetch(`${stringField(listening, 'http')}/api/state`, {
      headers: { 'x-relay-admin-token': adminToken },
    });
    assert.equal(response.status, 200);
    const state = (await response.json()) as {
      channels: { channelId: string; label: string; secret: string; users: { senderId: string }[] }[];
    };
    assert.equal(state.channels.length, 1);
    const [home] = state.channels;
    assert.equal(home?.channelId, 'home');
    assert.equal(home?.label, 'Home');
    assert.equal(home?.secret, 'abc12345xyz');
    assert.deepEqual(
      home?.users.map((user) => user.senderId),
      ['u1'],
    );
    assert.deepEqual(await relay.terminate(), { code: 0, signal: null });
  });

  test('a file that is not JSON exits 1 and names the file', async () => {
    const dataDir = await temporaryDir();
    const file = path.join(dataDir, 'broken.json');
    await writeFile(file, '{"version":1,');
    const result = await runHearth(['relay', 'import', file], { HEARTH_DATA_DIR: dataDir });
    assert.equal(result.code, 1);
    assert.ok(result.stderr.startsWith(`hearth: ${file} is not valid JSON`), result.stderr);
  });
});

describe('hearth command line errors', () => {
  test('a bad setting exits 2 and names every bad variable', async () => {
    const result = await runHearth(['start'], {
      HEARTH_DATA_DIR: await temporaryDir(),
      RELAY_PORT: 'abc',
      LOG_LEVEL: 'loud',
    });
    assert.equal(result.code, 2);
    assert.match(result.stderr, /RELAY_PORT="abc"/);
    assert.match(result.stderr, /LOG_LEVEL="loud"/);
    assert.doesNotMatch(result.stdout, /relay listening/);
  });

  for (const argv of [['frobnicate'], [], ['relay', 'import']]) {
    test(`\`hearth ${argv.join(' ')}\` exits 2 with the usage text`, async () => {
      const result = await runHearth(argv, { HEARTH_DATA_DIR: await temporaryDir() });
      assert.equal(result.code, 2);
      assert.match(result.stderr, /^usage:/);
      assert.match(result.stderr, /hearth relay import FILE/);
      assert.equal(result.stdout, '');
    });
  }
});

type LogLine = Record<string, unknown> & { msg?: unknown };

interface HearthProcess {
  readonly lines: LogLine[];
  readonly stdout: string;
  waitForLog(predicate: (line: LogLine) => boolean, description: string): Promise<LogLine>;
  /** Sends SIGTERM and resolves with how the process ended. */
  terminate(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs a long-lived `hearth` command, parsing its pino JSON lines as they arrive. */
function startHearth(argv: readonly string[], env: Record<string, string>): HearthProcess {
  const child = spawnHearth(argv, env);
  const lines: LogLine[] = [];
  let stdout = '';
  let stderr = '';
  let pending = '';
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const listener of listeners) listener();
  };
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    pending += chunk;
    const complete = pending.split('\n');
    pending = complete.pop() ?? '';
    for (const text of complete) {
      const line = parseLogLine(text);
      if (line) lines.push(line);
    }
    notify();
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = exitOf(child);
  void exited.then(notify);

  return {
    lines,
    get stdout() {
      return stdout;
    },
    waitForLog(predicate, description) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => finish(new Error(`timed out waiting for ${description}`)), guardMs);
        const check = () => {
          const found = lines.find(predicate);
          if (found) finish(undefined, found);
          else if (child.exitCode !== null || child.signalCode !== null) {
            finish(new Error(`hearth exited before ${description}; stderr: ${stderr}; stdout: ${stdout}`));
          }
        };
        const finish = (error: Error | undefined, line?: LogLine) => {
          clearTimeout(timer);
          listeners.delete(check);
          if (line) resolve(line);
          else reject(error);
        };
        listeners.add(check);
        check();
      });
    },
    async terminate() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

/** Runs a `hearth` command to completion. */
async function runHearth(
  argv: readonly string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnHearth(argv, env);
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const { code } = await exitOf(child);
  return { code, stdout, stderr };
}

function spawnHearth(argv: readonly string[], env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, [hearthBin, ...argv], {
    env: { ...inheritedEnvironment(), LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/** Resolves when the child ends; kills it if it outlives the guard. */
function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), guardMs);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal });
    });
  });
}

/** The test's environment without settings that would point the CLI at other storage. */
function inheritedEnvironment(): Record<string, string> {
  const inherited: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || /^(RELAY_|HEARTH_)/.test(name)) continue;
    if (['DATABASE_URL', 'REDIS_URL', 'LOG_LEVEL', 'NODE_OPTIONS'].includes(name)) continue;
    inherited[name] = value;
  }
  return inherited;
}

function parseLogLine(text: string): LogLine | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as LogLine) : undefined;
  } catch {
    return undefined;
  }
}

function stringField(line: LogLine, name: string): string {
  const value = line[name];
  assert.equal(typeof value, 'string', `${name} missing from ${JSON.stringify(line)}`);
  return String(value);
}

async function temporaryDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hearth-cli-test-'));
  temporaryDirs.push(dir);
  return dir;
}
