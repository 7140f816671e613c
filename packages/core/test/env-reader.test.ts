import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { ConfigError, EnvReader, readCommonConfig } from '../src/index.js';

describe('EnvReader.string', () => {
  test('returns the fallback when the variable is unset or blank', () => {
    const reader = new EnvReader({ BLANK: '   ', EMPTY: '' });
    assert.equal(reader.string('MISSING', 'fallback'), 'fallback');
    assert.equal(reader.string('BLANK', 'fallback'), 'fallback');
    assert.equal(reader.string('EMPTY', 'fallback'), 'fallback');
    assert.equal(reader.string('MISSING'), undefined);
    assert.equal(reader.string('BLANK'), undefined);
    reader.finish();
  });

  test('trims the value', () => {
    const reader = new EnvReader({ NAME: '  hearth \n' });
    assert.equal(reader.string('NAME', 'fallback'), 'hearth');
  });
});

describe('EnvReader.integer', () => {
  test('returns the fallback when unset or blank', () => {
    const reader = new EnvReader({ BLANK: ' ' });
    assert.equal(reader.integer('MISSING', 7), 7);
    assert.equal(reader.integer('BLANK', 7), 7);
    reader.finish();
  });

  test('parses whole numbers, including the bounds themselves', () => {
    const reader = new EnvReader({ PORT: ' 8080 ', LOW: '0', HIGH: '65535', NEGATIVE: '-5' });
    assert.equal(reader.integer('PORT', 1, { min: 0, max: 65535 }), 8080);
    assert.equal(reader.integer('LOW', 1, { min: 0, max: 65535 }), 0);
    assert.equal(reader.integer('HIGH', 1, { min: 0, max: 65535 }), 65535);
    assert.equal(reader.integer('NEGATIVE', 1), -5);
    reader.finish();
  });

  for (const raw of ['abc', '1.5', '1e3', '0x10', '12abc', '99999999999999999999']) {
    test(`rejects the non-integer ${JSON.stringify(raw)} and keeps the fallback`, () => {
      const reader = new EnvReader({ VALUE: raw });
      assert.equal(reader.integer('VALUE', 42), 42);
      const error = captureConfigError(() => reader.finish());
      assert.equal(error.problems.length, 1);
      assert.match(error.problems[0] ?? '', /^VALUE=/);
    });
  }

  test('rejects values below min or above max', () => {
    const reader = new EnvReader({ BELOW: '-1', ABOVE: '65536' });
    assert.equal(reader.integer('BELOW', 10, { min: 0, max: 65535 }), 10);
    assert.equal(reader.integer('ABOVE', 20, { min: 0, max: 65535 }), 20);
    const error = captureConfigError(() => reader.finish());
    assert.equal(error.problems.length, 2);
    assert.match(error.problems[0] ?? '', /^BELOW="-1" must be a whole number from 0 to 65535$/);
    assert.match(error.problems[1] ?? '', /^ABOVE="65536" must be a whole number from 0 to 65535$/);
  });
});

describe('EnvReader.boolean', () => {
  test('returns the fallback when unset or blank', () => {
    const reader = new EnvReader({ BLANK: '' });
    assert.equal(reader.boolean('MISSING', true), true);
    assert.equal(reader.boolean('BLANK', false), false);
    reader.finish();
  });

  test('accepts the usual spellings of true and false in any case', () => {
    for (const raw of ['1', 'true', 'TRUE', 'Yes', 'on']) {
      assert.equal(new EnvReader({ FLAG: raw }).boolean('FLAG', false), true, raw);
    }
    for (const raw of ['0', 'false', 'False', 'NO', 'off']) {
      assert.equal(new EnvReader({ FLAG: raw }).boolean('FLAG', true), false, raw);
    }
  });

  test('rejects anything else', () => {
    const reader = new EnvReader({ FLAG: 'maybe' });
    assert.equal(reader.boolean('FLAG', true), true);
    const error = captureConfigError(() => reader.finish());
    assert.deepEqual(error.problems, ['FLAG="maybe" must be true or false']);
  });
});

describe('EnvReader.url', () => {
  test('returns undefined when unset or blank', () => {
    const reader = new EnvReader({ BLANK: ' ' });
    assert.equal(reader.url('MISSING', ['https:']), undefined);
    assert.equal(reader.url('BLANK', ['https:']), undefined);
    reader.finish();
  });

  test('accepts a URL with one of the allowed protocols', () => {
    const reader = new EnvReader({ DATABASE_URL: 'postgresql://user:pw@db.example:5432/hearth' });
    assert.equal(
      reader.url('DATABASE_URL', ['postgres:', 'postgresql:']),
      'postgresql://user:pw@db.example:5432/hearth',
    );
    reader.finish();
  });

  test('rejects a URL with another protocol and text that is not a URL', () => {
    const reader = new EnvReader({ WRONG: 'http://db.example/hearth', GARBAGE: 'not a url' });
    assert.equal(reader.url('WRONG', ['postgres:', 'postgresql:']), undefined);
    assert.equal(reader.url('GARBAGE', ['redis:']), undefined);
    const error = captureConfigError(() => reader.finish());
    assert.equal(error.problems.length, 2);
    assert.match(error.problems[0] ?? '', /^WRONG=.* must be a URL starting with postgres: or postgresql:\/\/$/);
    assert.match(error.problems[1] ?? '', /^GARBAGE=.* must be a URL starting with redis:\/\/$/);
  });
});

describe('EnvReader.oneOf', () => {
  const levels = ['info', 'debug'] as const;

  test('returns the fallback when unset and the value when it is a choice', () => {
    const reader = new EnvReader({ LEVEL: ' debug ' });
    assert.equal(reader.oneOf('MISSING', levels, 'info'), 'info');
    assert.equal(reader.oneOf('LEVEL', levels, 'info'), 'debug');
    reader.finish();
  });

  test('rejects a value that is not a choice, case included', () => {
    const reader = new EnvReader({ LEVEL: 'DEBUG' });
    assert.equal(reader.oneOf('LEVEL', levels, 'info'), 'info');
    const error = captureConfigError(() => reader.finish());
    assert.deepEqual(error.problems, ['LEVEL="DEBUG" must be one of info, debug']);
  });
});

describe('EnvReader.finish and report', () => {
  test('does not throw when every value is good', () => {
    const reader = new EnvReader({ PORT: '1', FLAG: 'yes' });
    reader.integer('PORT', 0);
    reader.boolean('FLAG', false);
    assert.doesNotThrow(() => reader.finish());
  });

  test('throws one ConfigError listing every bad variable by name', () => {
    const reader = new EnvReader({
      PORT: 'abc',
      FLAG: 'maybe',
      URL: 'ftp://x',
      LEVEL: 'loud',
      GOOD: '5',
    });
    reader.integer('PORT', 0);
    reader.boolean('FLAG', false);
    reader.url('URL', ['https:']);
    reader.oneOf('LEVEL', ['info'], 'info');
    reader.integer('GOOD', 0);
    const error = captureConfigError(() => reader.finish());
    assert.equal(error.code, 'HEARTH_CONFIG_INVALID');
    assert.equal(error.name, 'ConfigError');
    assert.equal(error.problems.length, 4);
    for (const name of ['PORT', 'FLAG', 'URL', 'LEVEL']) {
      assert.ok(
        error.problems.some((problem) => problem.startsWith(`${name}=`)),
        `${name} missing from ${error.problems}`,
      );
      assert.match(error.message, new RegExp(`- ${name}=`));
    }
    assert.doesNotMatch(error.message, /GOOD/);
  });

  test('report() adds a problem that finish() then throws', () => {
    const reader = new EnvReader({});
    reader.report('A and B must be set together');
    const error = captureConfigError(() => reader.finish());
    assert.deepEqual(error.problems, ['A and B must be set together']);
    assert.match(error.message, /A and B must be set together/);
  });
});

describe('readCommonConfig', () => {
  test('uses the defaults when nothing is set', () => {
    const config = readCommonConfig({});
    assert.deepEqual(config, {
      dataDir: path.resolve(process.cwd(), 'data'),
      databaseUrl: undefined,
      redisUrl: undefined,
      logLevel: 'info',
    });
    assert.ok(path.isAbsolute(config.dataDir));
  });

  test('reads every setting and makes a relative data dir absolute', () => {
    const config = readCommonConfig({
      HEARTH_DATA_DIR: 'var/hearth',
      DATABASE_URL: 'postgres://db.example/hearth',
      REDIS_URL: 'rediss://cache.example:6380',
      LOG_LEVEL: 'debug',
    });
    assert.deepEqual(config, {
      dataDir: path.resolve(process.cwd(), 'var/hearth'),
      databaseUrl: 'postgres://db.example/hearth',
      redisUrl: 'rediss://cache.example:6380',
      logLevel: 'debug',
    });
  });

  test('records bad values on the given reader without throwing itself', () => {
    const env = { DATABASE_URL: 'mysql://db', REDIS_URL: 'http://cache', LOG_LEVEL: 'loud' };
    const reader = new EnvReader(env);
    const config = readCommonConfig(env, reader);
    assert.equal(config.logLevel, 'info');
    const error = captureConfigError(() => reader.finish());
    assert.deepEqual(
      error.problems.map((problem) => problem.split('=')[0]),
      ['DATABASE_URL', 'REDIS_URL', 'LOG_LEVEL'],
    );
  });

  test('throws a ConfigError naming the bad values when it owns the reader', () => {
    const error = captureConfigError(() => readCommonConfig({ LOG_LEVEL: 'loud', REDIS_URL: 'http://cache' }));
    assert.deepEqual(
      error.problems.map((problem) => problem.split('=')[0]),
      ['REDIS_URL', 'LOG_LEVEL'],
    );
  });
});

function captureConfigError(action: () => void): ConfigError {
  try {
    action();
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected a ConfigError');
}
