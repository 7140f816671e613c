/**
 * Reads settings from an environment map in one pass and reports every bad value at
 * once, so a misconfigured deployment fails at start-up with a message that names
 * each variable instead of failing later on first use.
 */
export type Environment = Readonly<Record<string, string | undefined>>;

export class ConfigError extends Error {
  readonly code = 'HEARTH_CONFIG_INVALID';
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

export interface IntegerOptions {
  min?: number;
  max?: number;
}

export class EnvReader {
  private readonly problems: string[] = [];

  constructor(private readonly env: Environment) {}

  /** A trimmed string, or the fallback when the variable is unset or blank. */
  string(name: string, fallback: string): string;
  string(name: string): string | undefined;
  string(name: string, fallback?: string): string | undefined {
    const raw = this.env[name]?.trim();
    return raw ? raw : fallback;
  }

  integer(name: string, fallback: number, options: IntegerOptions = {}): number {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    const { min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER } = options;
    if (!/^-?\d+$/.test(raw) || !Number.isSafeInteger(value) || value < min || value > max) {
      this.problems.push(`${name}=${JSON.stringify(raw)} must be a whole number from ${min} to ${max}`);
      return fallback;
    }
    return value;
  }

  boolean(name: string, fallback: boolean): boolean {
    const raw = this.string(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
    if (['0', 'false', 'no', 'off'].includes(raw)) return false;
    this.problems.push(`${name}=${JSON.stringify(raw)} must be true or false`);
    return fallback;
  }

  /** An absolute URL whose protocol is one of `protocols`. */
  url(name: string, protocols: readonly string[]): string | undefined {
    const raw = this.string(name);
    if (raw === undefined) return undefined;
    try {
      const parsed = new URL(raw);
      if (protocols.includes(parsed.protocol)) return raw;
    } catch {
      // reported below
    }
    this.problems.push(`${name}=${JSON.stringify(raw)} must be a URL starting with ${protocols.join(' or ')}//`);
    return undefined;
  }

  oneOf<const T extends string>(name: string, choices: readonly T[], fallback: T): T {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    if ((choices as readonly string[]).includes(raw)) return raw as T;
    this.problems.push(`${name}=${JSON.stringify(raw)} must be one of ${choices.join(', ')}`);
    return fallback;
  }

  /** Records a problem that spans several variables. */
  report(problem: string): void {
    this.problems.push(problem);
  }

  /** Throws a ConfigError naming every bad variable read so far. */
  finish(): void {
    if (this.problems.length > 0) throw new ConfigError(this.problems);
  }
}
