import type { IncomingMessage } from 'node:http';
import { PassThrough, Readable } from 'node:stream';
import busboy from 'busboy';
import { BadRequestError, FileTooLargeError } from '../errors.js';
import type { MediaLibrary, StoredMedia } from './media-library.js';

/**
 * Reads one upload in whichever of the seed's three forms it came (multipart, JSON with
 * base64 or a data URL, or a raw body) and stores it. On failure the rest of the request
 * body is read and thrown away before the error is answered, so the client receives the
 * 413 instead of a reset connection.
 */
export async function receiveUpload(
  request: IncomingMessage,
  query: { filename?: string | undefined },
  library: MediaLibrary,
): Promise<StoredMedia> {
  const contentType = (request.headers['content-type'] ?? '').toLowerCase();
  try {
    if (contentType.startsWith('multipart/form-data')) return await receiveMultipart(request, library);
    if (contentType.startsWith('application/json')) return await receiveJson(request, library);
    return await receiveRaw(request, query.filename, contentType, library);
  } catch (error) {
    await discardRequestBody(request);
    throw error;
  }
}

function tooLarge(library: MediaLibrary): FileTooLargeError {
  return new FileTooLargeError(`file too large (max ${Math.round(library.maxBytes / 1048576)}MB)`);
}

async function receiveRaw(
  request: IncomingMessage,
  filename: string | undefined,
  contentType: string,
  library: MediaLibrary,
): Promise<StoredMedia> {
  const declaredLength = Number(request.headers['content-length']);
  if (declaredLength > library.maxBytes) throw tooLarge(library);
  // The library destroys what it reads from on failure; a pass-through between keeps the
  // request (and with it the connection) alive for the answer.
  const intake = new PassThrough();
  request.pipe(intake);
  try {
    return await library.store(intake, filename, contentType || undefined);
  } finally {
    request.unpipe(intake);
  }
}

async function receiveMultipart(request: IncomingMessage, library: MediaLibrary): Promise<StoredMedia> {
  return new Promise<StoredMedia>((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      // Busboy reports its limit when a file *reaches* fileSize, so a file of exactly the
      // maximum would be refused; one byte more lets it report only files that pass it.
      parser = busboy({ headers: request.headers, limits: { fileSize: library.maxBytes + 1, files: 1, fields: 20 } });
    } catch (error) {
      reject(new BadRequestError(`invalid multipart request: ${(error as Error).message}`));
      return;
    }
    let upload: Promise<StoredMedia> | undefined;
    parser.on('file', (_field, file, info) => {
      if (upload || !info.filename) {
        file.resume();
        return;
      }
      const intake = new PassThrough();
      file.on('limit', () => {
        file.unpipe(intake);
        intake.destroy(tooLarge(library));
        file.resume();
      });
      file.pipe(intake);
      upload = library.store(intake, info.filename, info.mimeType);
      upload.catch(() => file.resume());
    });
    parser.on('error', (error: Error) => reject(new BadRequestError(`invalid multipart request: ${error.message}`)));
    parser.on('close', () => {
      if (upload) upload.then(resolve, reject);
      else reject(new BadRequestError('multipart upload has no file part'));
    });
    request.pipe(parser);
  });
}

async function receiveJson(request: IncomingMessage, library: MediaLibrary): Promise<StoredMedia> {
  // Base64 is 4/3 of the bytes; the margin covers the JSON around it and a data-URL prefix.
  const body = await readLimited(request, Math.ceil((library.maxBytes * 4) / 3) + 64 * 1024, library);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new BadRequestError(`invalid JSON body: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null) throw new BadRequestError('JSON upload must be an object');
  const { data, filename, mimeType } = parsed as Record<string, unknown>;
  if (typeof data !== 'string' || data.length === 0) throw new BadRequestError('data is required');
  if (filename !== undefined && typeof filename !== 'string') throw new BadRequestError('filename must be a string');
  if (mimeType !== undefined && typeof mimeType !== 'string') throw new BadRequestError('mimeType must be a string');
  const decoded = decodeData(data);
  return library.store(Readable.from([decoded.bytes]), filename, mimeType ?? decoded.mimeType);
}

/** Base64 text, or a `data:<type>;base64,<text>` URL whose type is used when none is given. */
function decodeData(data: string): { bytes: Buffer; mimeType: string | undefined } {
  let text = data;
  let mimeType: string | undefined;
  const dataUrl = /^data:([^;,]*)(;[^,]*)?,/.exec(data);
  if (dataUrl) {
    if (!dataUrl[2]?.includes('base64')) throw new BadRequestError('data URL must be base64 encoded');
    mimeType = dataUrl[1] || undefined;
    text = data.slice(dataUrl[0].length);
  }
  const compact = text.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(compact)) throw new BadRequestError('data must be base64 or a base64 data URL');
  return { bytes: Buffer.from(compact, 'base64'), mimeType };
}

/**
 * Collects the body up to `limit` bytes. Past it, it stops listening and pauses the request
 * without destroying it (as leaving a `for await` loop would), so discardRequestBody can
 * read the rest and the 413 is delivered on a connection that is still whole.
 */
function readLimited(request: IncomingMessage, limit: number, library: MediaLibrary): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
      request.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        stop();
        request.pause();
        reject(tooLarge(library));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      resolve(Buffer.concat(chunks));
    };
    const onError = (error: Error) => {
      stop();
      reject(new BadRequestError(`upload interrupted: ${error.message}`));
    };
    const onClose = () => {
      stop();
      reject(new BadRequestError('upload interrupted before the body was complete'));
    };
    request.on('data', onData);
    request.once('end', onEnd);
    request.once('error', onError);
    request.once('close', onClose);
  });
}

/**
 * Reads what is left of a rejected request so the response can be delivered; a sender
 * that keeps going far past any sane size is cut off instead.
 */
export function discardRequestBody(request: IncomingMessage, limit = 64 * 1024 * 1024): Promise<void> {
  if (request.readableEnded || request.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let discarded = 0;
    const onData = (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > limit) {
        request.destroy();
        resolve();
      }
    };
    request.on('data', onData);
    request.once('end', resolve);
    request.once('close', resolve);
    request.once('error', () => resolve());
    request.resume();
  });
}
