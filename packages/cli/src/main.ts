import { ConfigError } from '@hearth/core';
import { importRelayConfigFile } from './relay-import.js';
import { printRelayAdminToken } from './relay-token.js';
import { startServices } from './start-services.js';

const usage = `usage:
  hearth start                 run every Hearth service in this process
  hearth relay                 run the relay only
  hearth relay import FILE     import channels from the old relay's JSON config file
  hearth relay token           print the relay's admin token
settings come from environment variables; see each package's README`;

/** Runs the command named by `argv` and returns the exit code (undefined while serving). */
export async function runCommand(argv: readonly string[]): Promise<number | undefined> {
  const [command, subcommand, argument] = argv;
  switch (`${command ?? ''} ${subcommand ?? ''}`.trim()) {
    case 'start':
      await startServices(['relay']);
      return undefined;
    case 'relay':
      await startServices(['relay']);
      return undefined;
    case 'relay import':
      if (!argument) break;
      await importRelayConfigFile(argument);
      return 0;
    case 'relay token':
      await printRelayAdminToken();
      return 0;
  }
  process.stderr.write(`${usage}\n`);
  return 2;
}

runCommand(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (error: unknown) => {
    const message = error instanceof ConfigError || error instanceof Error ? error.message : String(error);
    process.stderr.write(`hearth: ${message}\n`);
    process.exitCode = error instanceof ConfigError ? 2 : 1;
  },
);
