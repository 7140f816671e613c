import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger } from '@hearth/core';
import type { Kysely } from 'kysely';
import { FileTooLargeError } from '../errors.js';
import type { RelaySchema } from '../storage/schema.js';
import { extensionForMimeType, fallbackMimeType, mimeTypeForExtension } from './mime-types.js';

export interface StoredMedia {
  id: string;
  fileName: string;
  mimeType: string;
  size: number;
}

export interface MediaLibraryOptions {
  directory: string;
  maxBytes: number;
  retentionMs: number;
  sweepIntervalMs: number;
}

/** `<uuid>` plus an optional short lowercase extension: the only names ever stored or served. */
const storedNamePattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(\.[a-z0-9]{1,10})?$/;
const extensionPattern = /^\.[a-z0-9]{1,10}$/;

/**
 * Uploaded files in a folder under the data directory, their metadata in the database.
 * A file is written under a temporary name and renamed only when complete, so a crash
 * mid-upload never leaves a partial file under a served name; the sweep removes such
 * leftovers with the expired files.
 */
export class MediaLibrary {
  private sweepTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Kysely<RelaySchema>,
    private readonly options: MediaLibraryOptions,
    private readonly logger: Logger,
  ) {}

  get maxBytes(): number {
    return this.options.maxBytes;
  }

  async open(): Promise<void> {
    await mkdir(this.options.directory, { recursive: true });
    await this.sweep();
    this.sweepTimer = setInterval(() => {
      this.sweep().catch((error: unknown) => this.logger.error({ err: error }, 'media sweep failed'));
    }, this.options.sweepIntervalMs);
    this.sweepTimer.unref();
  }

  close(): void {
    clearInterval(this.sweepTimer);
  }

  /**
   * Streams `source` into the library, failing with FileTooLargeError as soon as it
   * passes the size limit (the caller decides what to do with the rest of the source).
   */
  async store(
    source: Readable,
    originalName: string | undefined,
    declaredMimeType: string | undefined,
  ): Promise<StoredMedia> {
    const id = randomUUID();
    const extension = chooseExtension(originalName, declaredMimeType);
    const fileName = `${id}${extension}`;
    const temporary = path.join(this.options.directory, `.${id}.part`);
    let size = 0;
    const limit = this.options.maxBytes;
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        size += chunk.length;
        if (size > limit) callback(new FileTooLargeError(`file too large (max ${Math.round(limit / 1048576)}MB)`));
        else callback(null, chunk);
      },
    });
    try {
      await pipeline(source, counter, createWriteStream(temporary, { flags: 'wx' }));
      await rename(temporary, path.join(this.options.directory, fileName));
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
    const mimeType = chooseMimeType(declaredMimeType, extension);
    await this.db
      .insertInto('relay_media')
      .values({
        id,
        file_name: fileName,
        original_name: originalName ?? null,
        mime_type: mimeType,
        size,
        created_at: Date.now(),
      })
      .execute();
    return { id, fileName, mimeType, size };
  }

  /** The file behind a download name, unless the name is not one we store or the file is gone or expired. */
  async resolve(fileName: string): Promise<{ path: string; size: number; mimeType: string } | undefined> {
    if (!storedNamePattern.test(fileName)) return undefined;
    const filePath = path.join(this.options.directory, fileName);
    try {
      const info = await stat(filePath);
      if (!info.isFile() || Date.now() - info.mtimeMs > this.options.retentionMs) return undefined;
      return { path: filePath, size: info.size, mimeType: mimeTypeForExtension(path.extname(fileName)) };
    } catch {
      return undefined;
    }
  }

  /** Removes expired files and their rows, and any leftover file older than the retention. */
  async sweep(now = Date.now()): Promise<number> {
    const cutoff = now - this.options.retentionMs;
    const expired = await this.db
      .selectFrom('relay_media')
      .select('file_name')
      .where('created_at', '<', cutoff)
      .execute();
    let removed = 0;
    for (const { file_name } of expired) {
      await rm(path.join(this.options.directory, file_name), { force: true });
      removed += 1;
    }
    await this.db.deleteFrom('relay_media').where('created_at', '<', cutoff).execute();
    for (const entry of await readdir(this.options.directory, { withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const filePath = path.join(this.options.directory, entry.name);
      const info = await stat(filePath).catch(() => undefined);
      if (info && info.mtimeMs < cutoff) {
        await rm(filePath, { force: true });
        removed += 1;
      }
    }
    if (removed > 0) this.logger.info({ removed }, 'removed expired media');
    return removed;
  }
}

function chooseExtension(originalName: string | undefined, mimeType: string | undefined): string {
  const fromName = path.extname(path.basename(originalName ?? '')).toLowerCase();
  if (extensionPattern.test(fromName)) return fromName;
  return (mimeType && extensionForMimeType(mimeType)) ?? '';
}

function chooseMimeType(declared: string | undefined, extension: string): string {
  const essence = declared?.split(';')[0]?.trim().toLowerCase();
  if (essence && /^[a-z0-9.+-]+\/[a-z0-9.+-]+$/.test(essence) && essence !== fallbackMimeType) return essence;
  return mimeTypeForExtension(extension);
}
