import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import SqliteDatabase from 'better-sqlite3';
import { type Kysely, type Migration, sql } from 'kysely';
import pg from 'pg';
import { createLogger, type Database, type DatabaseDialect, openDatabase, runMigrations } from '../src/index.js';

const logger = createLogger({ level: 'silent' });
const databaseUrl = process.env.DATABASE_URL;
const postgresSkip = databaseUrl ? false : 'DATABASE_URL not set: PostgreSQL storage tests need a server';

const temporaryDirs: string[] = [];
const createdSchemas: string[] = [];

after(async () => {
  await Promise.all(temporaryDirs.map((dir) => rm(dir, { recursive: true, force: true })));
  if (databaseUrl && createdSchemas.length > 0) {
    await withPostgresClient(databaseUrl, async (client) => {
      for (const schema of createdSchemas) await client.query(`drop schema if exists ${schema} cascade`);
    });
  }
});

for (const dialect of ['sqlite', 'postgres'] as const) {
  describe(`migrations and queries on ${dialect}`, { skip: dialect === 'postgres' ? postgresSkip : false }, () => {
    test('each migration runs once and is recorded in <prefix>_migrations', async () => {
      const database = await openFresh(dialect);
      try {
        const runs = { first: 0, second: 0 };
        const migrations: Record<string, Migration> = {
          '001_first': {
            up: async (db) => {
              runs.first += 1;
              await db.schema
                .createTable('once_items')
                .addColumn('id', 'integer', (column) => column.primaryKey())
                .execute();
            },
          },
          '002_second': {
            up: async (db) => {
              runs.second += 1;
              await db.schema.alterTable('once_items').addColumn('label', 'text').execute();
            },
          },
        };
        assert.deepEqual(await runMigrations(database.db, 'once', migrations), ['001_first', '002_second']);
        assert.deepEqual(await appliedMigrations(database.db, 'once'), ['001_first', '002_second']);
        await sql`insert into once_items (id, label) values (1, 'one')`.execute(database.db);

        assert.deepEqual(await runMigrations(database.db, 'once', migrations), []);
        assert.deepEqual(runs, { first: 1, second: 1 });

        const withThird: Record<string, Migration> = {
          ...migrations,
          '003_third': {
            up: async (db) =>
              void (await db.schema.createIndex('once_label').on('once_items').column('label').execute()),
          },
        };
        assert.deepEqual(await runMigrations(database.db, 'once', withThird), ['003_third']);
        assert.deepEqual(runs, { first: 1, second: 1 });
        assert.deepEqual(await appliedMigrations(database.db, 'once'), ['001_first', '002_second', '003_third']);
      } finally {
        await database.close();
      }
    });

    test('two prefixes keep separate histories', async () => {
      const database = await openFresh(dialect);
      try {
        const tableMigration = (table: string): Migration => ({
          up: async (db) => void (await db.schema.createTable(table).addColumn('id', 'integer').execute()),
        });
        assert.deepEqual(await runMigrations(database.db, 'alpha', { '001_init': tableMigration('alpha_items') }), [
          '001_init',
        ]);
        // Same migration name under another prefix: it must still run.
        assert.deepEqual(
          await runMigrations(database.db, 'beta', {
            '001_init': tableMigration('beta_items'),
            '002_more': tableMigration('beta_more'),
          }),
          ['001_init', '002_more'],
        );
        assert.deepEqual(await appliedMigrations(database.db, 'alpha'), ['001_init']);
        assert.deepEqual(await appliedMigrations(database.db, 'beta'), ['001_init', '002_more']);
        await sql`select count(*) from alpha_items`.execute(database.db);
        await sql`select count(*) from beta_more`.execute(database.db);
      } finally {
        await database.close();
      }
    });

    test('a failing migration throws an error naming it and is not recorded', async () => {
      const database = await openFresh(dialect);
      try {
        const good: Migration = {
          up: async (db) =>
            void (await db.schema.createTable('fail_items').ifNotExists().addColumn('id', 'integer').execute()),
        };
        const broken: Migration = {
          up: async () => {
            throw new Error('column type unknown');
          },
        };
        await assert.rejects(
          runMigrations(database.db, 'fail', { '001_good': good, '002_broken': broken }),
          (error: Error) => {
            assert.match(error.message, /migration 002_broken of fail failed/);
            assert.match(error.message, /column type unknown/);
            return true;
          },
        );
        assert.ok(!(await appliedMigrations(database.db, 'fail')).includes('002_broken'));

        const repaired: Migration = { up: async () => undefined };
        await runMigrations(database.db, 'fail', { '001_good': good, '002_broken': repaired });
        assert.deepEqual(await appliedMigrations(database.db, 'fail'), ['001_good', '002_broken']);
      } finally {
        await database.close();
      }
    });

    test('BIGINT values and counts come back as JS numbers', async () => {
      const database = await openFresh(dialect);
      try {
        await runMigrations(database.db, 'big', {
          '001_sizes': {
            up: async (db) =>
              void (await db.schema
                .createTable('big_sizes')
                .addColumn('id', 'integer', (column) => column.primaryKey())
                .addColumn('bytes', 'bigint', (column) => column.notNull())
                .execute()),
          },
        });
        const large = 2 ** 40 + 7;
        await sql`insert into big_sizes (id, bytes) values (1, ${large}), (2, ${Number.MAX_SAFE_INTEGER})`.execute(
          database.db,
        );
        const { rows } = await sql<{ bytes: unknown }>`select bytes from big_sizes order by id`.execute(database.db);
        assert.deepEqual(rows, [{ bytes: large }, { bytes: Number.MAX_SAFE_INTEGER }]);
        const counted = await sql<{ total: unknown }>`select count(*) as total from big_sizes`.execute(database.db);
        assert.deepEqual(counted.rows, [{ total: 2 }]);
      } finally {
        await database.close();
      }
    });
  });
}

describe('SQLite files', () => {
  test('the database file is created under dataDir (folder included) with WAL journaling', async () => {
    const root = await temporaryDir();
    const dataDir = path.join(root, 'not', 'yet', 'there');
    const database = await openDatabase<unknown>({ dataDir, logger });
    const file = path.join(dataDir, 'hearth.sqlite');
    try {
      assert.equal(database.dialect, 'sqlite');
      assert.equal(database.location, file);
      assert.ok(existsSync(file), `${file} was not created`);
      const { rows } = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(database.db);
      assert.deepEqual(rows, [{ journal_mode: 'wal' }]);
      await sql`create table kept (value text)`.execute(database.db);
      await sql`insert into kept (value) values ('still here')`.execute(database.db);
    } finally {
      await database.close();
    }
    // WAL mode is stored in the file itself, and the row must have reached it.
    const raw = new SqliteDatabase(file, { readonly: true });
    try {
      assert.equal(raw.pragma('journal_mode', { simple: true }), 'wal');
      assert.deepEqual(raw.prepare('select value from kept').all(), [{ value: 'still here' }]);
    } finally {
      raw.close();
    }
  });

  test('sqliteFile names the file inside dataDir', async () => {
    const dataDir = await temporaryDir();
    const database = await openDatabase<unknown>({ dataDir, sqliteFile: 'relay.sqlite', logger });
    try {
      assert.equal(database.location, path.join(dataDir, 'relay.sqlite'));
      assert.ok(existsSync(path.join(dataDir, 'relay.sqlite')));
      assert.ok(!existsSync(path.join(dataDir, 'hearth.sqlite')));
    } finally {
      await database.close();
    }
  });
});

describe('PostgreSQL connections', () => {
  test('an unreachable server gives an error naming the host but not the password', async () => {
    const password = 'pa55-w0rd-never-logged';
    await assert.rejects(
      openDatabase<unknown>({
        databaseUrl: `postgres://hearth:${password}@127.0.0.1:1/hearth`,
        dataDir: os.tmpdir(),
        logger,
      }),
      (error: Error) => {
        assert.match(error.message, /cannot reach PostgreSQL at postgres:\/\/hearth:\*\*\*@127\.0\.0\.1:1\/hearth/);
        assert.ok(!error.message.includes(password), error.message);
        return true;
      },
    );
  });

  test('opens PostgreSQL when a URL is given, with a location safe to log', { skip: postgresSkip }, async () => {
    const url = new URL(await freshSchemaUrl());
    const database = await openDatabase<unknown>({ databaseUrl: url.toString(), dataDir: os.tmpdir(), logger });
    try {
      assert.equal(database.dialect, 'postgres');
      assert.equal(new URL(database.location).host, url.host);
      if (url.password) assert.ok(!database.location.includes(url.password), database.location);
      const { rows } = await sql<{ one: number }>`select 1 as one`.execute(database.db);
      assert.deepEqual(rows, [{ one: 1 }]);
    } finally {
      await database.close();
    }
  });

  test('a prefix already migrated in another schema does not hide this schema’s history', {
    skip: postgresSkip,
  }, async () => {
    const migrations: Record<string, Migration> = {
      '001_init': {
        up: async (db) => void (await db.schema.createTable('shared_items').addColumn('id', 'integer').execute()),
      },
    };
    const first = await openDatabase<unknown>({ databaseUrl: await freshSchemaUrl(), dataDir: os.tmpdir(), logger });
    const second = await openDatabase<unknown>({ databaseUrl: await freshSchemaUrl(), dataDir: os.tmpdir(), logger });
    try {
      assert.deepEqual(await runMigrations(first.db, 'shared', migrations), ['001_init']);
      assert.deepEqual(await runMigrations(second.db, 'shared', migrations), ['001_init']);
      assert.deepEqual(await appliedMigrations(second.db, 'shared'), ['001_init']);
      await sql`select count(*) from shared_items`.execute(second.db);
    } finally {
      await first.close();
      await second.close();
    }
  });

  test('nodes starting together on one database apply each migration once', { skip: postgresSkip }, async () => {
    const url = await freshSchemaUrl();
    const nodes = await Promise.all(
      [1, 2, 3].map(() => openDatabase<unknown>({ databaseUrl: url, dataDir: os.tmpdir(), logger })),
    );
    try {
      let runs = 0;
      const migrations: Record<string, Migration> = {
        '001_init': {
          up: async (db) => {
            runs += 1;
            await db.schema.createTable('race_items').addColumn('id', 'integer').execute();
          },
        },
      };
      const applied = await Promise.all(nodes.map((node) => runMigrations(node.db, 'race', migrations)));
      assert.equal(runs, 1);
      assert.deepEqual(applied.flat(), ['001_init']);
    } finally {
      await Promise.all(nodes.map((node) => node.close()));
    }
  });
});

async function openFresh(dialect: DatabaseDialect): Promise<Database<unknown>> {
  if (dialect === 'sqlite') return openDatabase<unknown>({ dataDir: await temporaryDir(), logger });
  return openDatabase<unknown>({ databaseUrl: await freshSchemaUrl(), dataDir: os.tmpdir(), logger });
}

async function appliedMigrations(db: Kysely<unknown>, prefix: string): Promise<string[]> {
  const { rows } = await sql<{
    name: string;
  }>`select name from ${sql.table(`${prefix}_migrations`)} order by name`.execute(db);
  return rows.map((row) => row.name);
}

async function temporaryDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hearth-core-db-'));
  temporaryDirs.push(dir);
  return dir;
}

/** DATABASE_URL pointed at a new empty schema, so each test starts from an empty database. */
async function freshSchemaUrl(): Promise<string> {
  if (!databaseUrl) throw new Error('DATABASE_URL not set');
  const schema = `test_${randomBytes(6).toString('hex')}`;
  await withPostgresClient(databaseUrl, (client) => client.query(`create schema ${schema}`));
  createdSchemas.push(schema);
  const url = new URL(databaseUrl);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

async function withPostgresClient<T>(url: string, action: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await action(client);
  } finally {
    await client.end();
  }
}
