import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { readdir, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { assertErrorBody, metricSample } from './support/http-api.js';
import { adminToken, type RelayHarness, startRelay } from './support/relay-harness.js';

/**
 * Media of the relay seed: the three upload forms and their result, downloads and the
 * extension table, upload authentication, the 10 MB limit (answered with 413 in every
 * form), bad input and path traversal, 7-day expiry, metadata persistence and metrics.
 */

const MB = 1024 * 1024;
const maxBytes = 10 * MB;
const day = 24 * 60 * 60 * 1000;
const minute = 60 * 1000;
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface UploadResult {
  ok: boolean;
  id: string;
  fileName: string;
  url: string;
  mimeType: string;
  size: number;
}

interface RawOptions {
  filename?: string;
  contentType?: string;
  /** Credentials; the admin token header when omitted. */
  headers?: Record<string, string>;
  query?: Record<string, string>;
}

function mediaDir(harness: RelayHarness): string {
  return path.join(harness.dataDir, 'relay-media');
}

async function mediaFiles(harness: RelayHarness): Promise<string[]> {
  return (await readdir(mediaDir(harness))).sort();
}

function uploadUrl(harness: RelayHarness, query: Record<string, string> = {}): string {
  const search = new URLSearchParams(query).toString();
  return `${harness.url}/api/media/upload${search ? `?${search}` : ''}`;
}

function postRaw(harness: RelayHarness, bytes: Uint8Array, options: RawOptions = {}): Promise<Response> {
  const headers: Record<string, string> = options.headers ?? { 'x-relay-admin-token': adminToken };
  if (options.contentType) headers['content-type'] = options.contentType;
  const query = { ...options.query, ...(options.filename !== undefined ? { filename: options.filename } : {}) };
  return fetch(uploadUrl(harness, query), { method: 'POST', headers, body: bytes });
}

function postMultipart(harness: RelayHarness, form: FormData): Promise<Response> {
  return fetch(uploadUrl(harness), { method: 'POST', headers: { 'x-relay-admin-token': adminToken }, body: form });
}

function postJson(harness: RelayHarness, body: unknown): Promise<Response> {
  return harness.request('/api/media/upload', { json: body });
}

/** GET without any credential. */
function download(harness: RelayHarness, fileName: string): Promise<Response> {
  return fetch(`${harness.url}/api/media/${fileName}`);
}

async function expectUploaded(response: Response): Promise<UploadResult> {
  const text = await response.text();
  assert.equal(response.status, 200, text);
  const body = JSON.parse(text) as UploadResult;
  assert.equal(body.ok, true);
  assert.match(body.id, uuidPattern);
  assert.equal(typeof body.fileName, 'string');
  assert.equal(typeof body.url, 'string');
  assert.equal(typeof body.mimeType, 'string');
  assert.equal(typeof body.size, 'number');
  return body;
}

/** Asserts `response` answered `status` with the error envelope, `{ok: false, error}` (that error when given). */
async function expectError(response: Response, status: number, error?: string): Promise<void> {
  const text = await response.text();
  assertErrorBody({ status: response.status, body: JSON.parse(text), text }, status, error);
}

async function expectDownload(harness: RelayHarness, fileName: string, bytes: Uint8Array): Promise<Response> {
  const response = await download(harness, fileName);
  const received = Buffer.from(await response.arrayBuffer());
  assert.equal(response.status, 200);
  assert.equal(received.length, bytes.length);
  assert.ok(received.equals(bytes), 'downloaded bytes differ from the uploaded ones');
  return response;
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** A body with no Content-Length, sent with chunked transfer encoding. */
function chunkedBody(total: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= total) {
        controller.close();
        return;
      }
      const size = Math.min(MB, total - sent);
      controller.enqueue(new Uint8Array(size).fill(0x61));
      sent += size;
    },
  });
}

async function mediaRow(harness: RelayHarness, id: string) {
  return harness.relay.context.database.db
    .selectFrom('relay_media')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirst();
}

describe('media upload forms and download', () => {
  let harness: RelayHarness;

  before(async () => {
    harness = await startRelay();
  });

  after(async () => {
    await harness.cleanup();
  });

  test('multipart/form-data with a file part named "file" stores the file', async () => {
    const bytes = randomBytes(3000);
    const form = new FormData();
    form.append('file', new Blob([bytes], { type: 'image/png' }), 'Holiday.PNG');
    const result = await expectUploaded(await postMultipart(harness, form));
    assert.equal(result.fileName, `${result.id}.png`);
    assert.equal(result.mimeType, 'image/png');
    assert.equal(result.size, bytes.length);
    assert.equal(result.url, `${harness.url}/api/media/${result.fileName}`);
    const response = await expectDownload(harness, result.fileName, bytes);
    assert.equal(response.headers.get('content-type'), 'image/png');
  });

  test('multipart/form-data with a file part under another field name stores the file', async () => {
    const bytes = randomBytes(1234);
    const form = new FormData();
    form.append('caption', 'not a file');
    form.append('attachment', new Blob([bytes], { type: 'application/pdf' }), 'report.pdf');
    const result = await expectUploaded(await postMultipart(harness, form));
    assert.equal(result.fileName, `${result.id}.pdf`);
    assert.equal(result.mimeType, 'application/pdf');
    assert.equal(result.size, bytes.length);
    await expectDownload(harness, result.fileName, bytes);
  });

  test('JSON with base64 data, filename and mimeType stores the file', async () => {
    const bytes = randomBytes(2048);
    const result = await expectUploaded(
      await postJson(harness, { data: bytes.toString('base64'), filename: 'voice.OGG', mimeType: 'audio/ogg' }),
    );
    assert.equal(result.fileName, `${result.id}.ogg`);
    assert.equal(result.mimeType, 'audio/ogg');
    assert.equal(result.size, bytes.length);
    assert.equal(result.url, `${harness.url}/api/media/${result.fileName}`);
    const response = await expectDownload(harness, result.fileName, bytes);
    assert.equal(response.headers.get('content-type'), 'audio/ogg');
  });

  test('JSON with a data URL and no mimeType takes the type from the data URL', async () => {
    const bytes = randomBytes(700);
    const result = await expectUploaded(
      await postJson(harness, { data: `data:image/png;base64,${bytes.toString('base64')}`, filename: 'dot.png' }),
    );
    assert.equal(result.mimeType, 'image/png');
    assert.equal(result.fileName, `${result.id}.png`);
    assert.equal(result.size, bytes.length);
    await expectDownload(harness, result.fileName, bytes);
  });

  test('JSON with a data URL and no filename takes type and extension from the data URL', async () => {
    const bytes = randomBytes(512);
    const result = await expectUploaded(
      await postJson(harness, { data: `data:image/webp;base64,${bytes.toString('base64')}` }),
    );
    assert.equal(result.mimeType, 'image/webp');
    assert.equal(result.fileName, `${result.id}.webp`);
    const response = await expectDownload(harness, result.fileName, bytes);
    assert.equal(response.headers.get('content-type'), 'image/webp');
  });

  test('raw body with Content-Type and ?filename= stores the file', async () => {
    const bytes = randomBytes(4096);
    const result = await expectUploaded(
      await postRaw(harness, bytes, { contentType: 'video/mp4', filename: 'Clip.MP4' }),
    );
    assert.equal(result.fileName, `${result.id}.mp4`);
    assert.equal(result.mimeType, 'video/mp4');
    assert.equal(result.size, bytes.length);
    assert.equal(result.url, `${harness.url}/api/media/${result.fileName}`);
    const response = await expectDownload(harness, result.fileName, bytes);
    assert.equal(response.headers.get('content-type'), 'video/mp4');
  });

  test('upload result: fileName is the id plus the lowercased original extension', async () => {
    const result = await expectUploaded(
      await postRaw(harness, randomBytes(10), { contentType: 'image/jpeg', filename: 'IMG_0001.JPEG' }),
    );
    assert.equal(result.fileName, `${result.id}.jpeg`);
    assert.deepEqual((await mediaFiles(harness)).includes(result.fileName), true);
  });

  test('upload result: url comes from the request host when no public base URL is set', async () => {
    const result = await expectUploaded(await postRaw(harness, randomBytes(10), { filename: 'a.gif' }));
    const url = new URL(result.url);
    assert.equal(url.host, new URL(harness.url).host);
    assert.equal(url.pathname, `/api/media/${result.fileName}`);
  });

  test('an original file name with a path never becomes the stored path', async () => {
    const bytes = randomBytes(64);
    const result = await expectUploaded(
      await postRaw(harness, bytes, { contentType: 'image/png', filename: '../../escape.png' }),
    );
    assert.equal(result.fileName, `${result.id}.png`);
    assert.ok((await mediaFiles(harness)).includes(result.fileName));
    assert.ok(!(await readdir(harness.dataDir)).includes('escape.png'));
    await expectDownload(harness, result.fileName, bytes);
  });

  const extensionTable: Array<[string, string]> = [
    ['.jpg', 'image/jpeg'],
    ['.jpeg', 'image/jpeg'],
    ['.png', 'image/png'],
    ['.gif', 'image/gif'],
    ['.webp', 'image/webp'],
    ['.svg', 'image/svg+xml'],
    ['.mp3', 'audio/mpeg'],
    ['.ogg', 'audio/ogg'],
    ['.wav', 'audio/wav'],
    ['.mp4', 'video/mp4'],
    ['.webm', 'video/webm'],
    ['.pdf', 'application/pdf'],
    ['.xyz', 'application/octet-stream'],
  ];
  for (const [extension, mimeType] of extensionTable) {
    const label = extension === '.xyz' ? 'an unknown extension (.xyz)' : extension;
    test(`GET /api/media/:filename serves ${label} as ${mimeType}`, async () => {
      const bytes = randomBytes(256);
      // Declared as octet-stream, so the download type can only come from the extension.
      const result = await expectUploaded(
        await postRaw(harness, bytes, { contentType: 'application/octet-stream', filename: `sample${extension}` }),
      );
      assert.equal(result.fileName, `${result.id}${extension}`);
      const response = await expectDownload(harness, result.fileName, bytes);
      assert.equal(response.headers.get('content-type'), mimeType);
    });
  }

  test('GET /api/media/:filename answers with Cache-Control: public, max-age=86400 and needs no credentials', async () => {
    const bytes = randomBytes(100);
    const result = await expectUploaded(await postRaw(harness, bytes, { filename: 'song.mp3' }));
    const response = await fetch(`${harness.url}/api/media/${result.fileName}`, { headers: {} });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('cache-control'), 'public, max-age=86400');
    assert.ok(Buffer.from(await response.arrayBuffer()).equals(bytes));
  });

  test('the media row is stored in the database (relay_media)', async () => {
    const bytes = randomBytes(321);
    const result = await expectUploaded(
      await postRaw(harness, bytes, { contentType: 'audio/wav', filename: 'Memo.WAV' }),
    );
    const row = await mediaRow(harness, result.id);
    assert.ok(row, 'relay_media row missing');
    assert.equal(row.file_name, result.fileName);
    assert.equal(row.mime_type, 'audio/wav');
    assert.equal(Number(row.size), bytes.length);
    assert.equal(row.original_name, 'Memo.WAV');
    assert.ok(Math.abs(Number(row.created_at) - Date.now()) < day, 'created_at is not a millisecond timestamp');
  });

  test('/metrics: relay_media_bytes_total{direction="upload"} grows by the uploaded size', async () => {
    const before = await metricSample(harness, 'relay_media_bytes_total{direction="upload"}');
    const bytes = randomBytes(12_345);
    await expectUploaded(await postRaw(harness, bytes, { contentType: 'image/gif', filename: 'anim.gif' }));
    assert.equal(await metricSample(harness, 'relay_media_bytes_total{direction="upload"}'), before + bytes.length);
  });
});

describe('media upload authentication (media class)', () => {
  let harness: RelayHarness;
  const secret = 'media-channel-secret-01';
  const aliceToken = 'a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1';
  const bobToken = 'b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2';

  before(async () => {
    harness = await startRelay();
    assert.equal((await harness.request('/api/channels', { json: { channelId: 'family', secret } })).status, 200);
    const alice = await harness.request('/api/channels/family/users', {
      json: { senderId: 'alice', token: aliceToken },
    });
    assert.equal(alice.status, 200);
    const bob = await harness.request('/api/channels/family/users', {
      json: { senderId: 'bob', token: bobToken, enabled: false },
    });
    assert.equal(bob.status, 200);
  });

  after(async () => {
    await harness.cleanup();
  });

  async function expectAccepted(options: RawOptions): Promise<void> {
    const bytes = randomBytes(200);
    const result = await expectUploaded(await postRaw(harness, bytes, { filename: 'auth.png', ...options }));
    await expectDownload(harness, result.fileName, bytes);
  }

  async function expectRejected(options: RawOptions): Promise<void> {
    const before = await mediaFiles(harness);
    // A body large enough that an unread rest would reset the connection instead of answering.
    const response = await postRaw(harness, randomBytes(2 * MB), { filename: 'auth.png', ...options });
    await expectError(response, 401);
    assert.deepEqual(await mediaFiles(harness), before);
  }

  test('media upload accepts the admin token in X-Relay-Admin-Token', async () => {
    await expectAccepted({ headers: { 'x-relay-admin-token': adminToken } });
  });

  test('media upload accepts the admin token as ?adminToken=', async () => {
    await expectAccepted({ headers: {}, query: { adminToken } });
  });

  test('media upload accepts X-Channel-Secret of a channel', async () => {
    await expectAccepted({ headers: { 'x-channel-secret': secret } });
  });

  test("media upload accepts a channel user's token as Authorization: Bearer", async () => {
    await expectAccepted({ headers: { authorization: `Bearer ${aliceToken}` } });
  });

  test("media upload accepts a channel user's token as ?token=", async () => {
    await expectAccepted({ headers: {}, query: { token: aliceToken } });
  });

  test('media upload accepts the JSON form with X-Channel-Secret (the plugin outbound upload)', async () => {
    const bytes = randomBytes(90);
    const response = await fetch(uploadUrl(harness), {
      method: 'POST',
      headers: { 'x-channel-secret': secret, 'content-type': 'application/json' },
      body: JSON.stringify({ data: bytes.toString('base64'), filename: 'reply.jpg', mimeType: 'image/jpeg' }),
    });
    const result = await expectUploaded(response);
    await expectDownload(harness, result.fileName, bytes);
  });

  test("media upload answers 401 for a disabled user's token (Bearer and ?token=)", async () => {
    await expectRejected({ headers: { authorization: `Bearer ${bobToken}` } });
    await expectRejected({ headers: {}, query: { token: bobToken } });
  });

  test('media upload answers 401 for a wrong channel secret', async () => {
    await expectRejected({ headers: { 'x-channel-secret': `${secret}-wrong` } });
  });

  test('media upload answers 401 for a wrong admin token or an unknown user token', async () => {
    await expectRejected({ headers: { 'x-relay-admin-token': `${adminToken}-wrong` } });
    await expectRejected({ headers: {}, query: { adminToken: 'nope' } });
    await expectRejected({ headers: { authorization: 'Bearer ffffffffffffffffffffffffffffffff' } });
  });

  test('media upload answers 401 without credentials', async () => {
    await expectRejected({ headers: {} });
    const form = new FormData();
    form.append('file', new Blob([randomBytes(100)]), 'x.png');
    await expectError(await fetch(uploadUrl(harness), { method: 'POST', body: form }), 401);
  });

  test('after 401 answers no connection is left half-read: the relay stops cleanly', async () => {
    await harness.stop();
  });
});

describe('media upload size limit (10 MB)', () => {
  let harness: RelayHarness;
  const tooLargeMessage = 'file too large (max 10MB)';

  before(async () => {
    harness = await startRelay();
  });

  after(async () => {
    await harness.cleanup();
  });

  /** The 413 arrived as a response (fetch resolved), and nothing of the upload is left on disk. */
  async function expectTooLarge(send: () => Promise<Response>): Promise<void> {
    const before = await mediaFiles(harness);
    const response = await send();
    await expectError(response, 413, tooLargeMessage);
    assert.deepEqual(await mediaFiles(harness), before, 'a partial or temporary file was left behind');
  }

  test('a raw body of exactly 10 MB is accepted', async () => {
    const bytes = randomBytes(maxBytes);
    const result = await expectUploaded(
      await postRaw(harness, bytes, { contentType: 'video/webm', filename: 'big.webm' }),
    );
    assert.equal(result.size, maxBytes);
    const response = await download(harness, result.fileName);
    assert.equal(response.status, 200);
    assert.equal(sha256(Buffer.from(await response.arrayBuffer())), sha256(bytes));
  });

  test('a multipart file of exactly 10 MB is accepted', async () => {
    const bytes = randomBytes(maxBytes);
    const form = new FormData();
    form.append('file', new Blob([bytes], { type: 'video/mp4' }), 'big.mp4');
    const result = await expectUploaded(await postMultipart(harness, form));
    assert.equal(result.size, maxBytes);
    const response = await download(harness, result.fileName);
    assert.equal(sha256(Buffer.from(await response.arrayBuffer())), sha256(bytes));
  });

  test('a JSON base64 file of exactly 10 MB is accepted', async () => {
    const bytes = randomBytes(maxBytes);
    const result = await expectUploaded(
      await postJson(harness, { data: bytes.toString('base64'), filename: 'big.pdf', mimeType: 'application/pdf' }),
    );
    assert.equal(result.size, maxBytes);
    const response = await download(harness, result.fileName);
    assert.equal(sha256(Buffer.from(await response.arrayBuffer())), sha256(bytes));
  });

  test('10 MB + 1 byte as a raw body with Content-Length answers 413 file too large (max 10MB)', async () => {
    await expectTooLarge(() =>
      postRaw(harness, new Uint8Array(maxBytes + 1), { contentType: 'video/mp4', filename: 'huge.mp4' }),
    );
  });

  test('10 MB + 1 byte as a chunked raw body answers 413 file too large (max 10MB)', async () => {
    await expectTooLarge(() =>
      fetch(uploadUrl(harness, { filename: 'huge.webm' }), {
        method: 'POST',
        headers: { 'x-relay-admin-token': adminToken, 'content-type': 'video/webm' },
        body: chunkedBody(maxBytes + 1),
        duplex: 'half',
      }),
    );
  });

  test('10 MB + 1 byte as a multipart file answers 413 file too large (max 10MB)', async () => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(maxBytes + 1)], { type: 'video/mp4' }), 'huge.mp4');
    await expectTooLarge(() => postMultipart(harness, form));
  });

  test('10 MB + 1 byte as JSON base64 answers 413 file too large (max 10MB)', async () => {
    const data = Buffer.alloc(maxBytes + 1).toString('base64');
    await expectTooLarge(() => postJson(harness, { data, filename: 'huge.png', mimeType: 'image/png' }));
  });

  test('a JSON body far beyond the limit answers 413 file too large (max 10MB)', async () => {
    const data = Buffer.alloc(15 * MB).toString('base64');
    await expectTooLarge(() => postJson(harness, { data, filename: 'huger.png' }));
  });

  test('after 413 answers the relay keeps serving uploads and downloads', async () => {
    await expectTooLarge(() => postRaw(harness, new Uint8Array(maxBytes + 1), { filename: 'again.png' }));
    const bytes = randomBytes(1000);
    const result = await expectUploaded(await postRaw(harness, bytes, { filename: 'after.png' }));
    await expectDownload(harness, result.fileName, bytes);
    assert.equal((await fetch(`${harness.url}/healthz`)).status, 200);
  });

  test('after 413 answers no connection is left half-read: the relay stops cleanly', async () => {
    // A rejected body left unread (or a request destroyed mid-body) keeps its connection
    // open forever and this stop never resolves.
    await harness.stop();
  });
});

describe('media bad input', () => {
  let harness: RelayHarness;

  before(async () => {
    harness = await startRelay();
    await writeFile(path.join(harness.dataDir, 'outside.txt'), 'TOP-SECRET-OUTSIDE-MEDIA');
  });

  after(async () => {
    await harness.cleanup();
  });

  async function expectBadRequest(send: () => Promise<Response>): Promise<void> {
    const before = await mediaFiles(harness);
    await expectError(await send(), 400);
    assert.deepEqual(await mediaFiles(harness), before);
  }

  test('a malformed JSON body answers 400', async () => {
    await expectBadRequest(() =>
      fetch(uploadUrl(harness), {
        method: 'POST',
        headers: { 'x-relay-admin-token': adminToken, 'content-type': 'application/json' },
        body: '{"data": "aGk=", ',
      }),
    );
  });

  test('JSON without data answers 400', async () => {
    await expectBadRequest(() => postJson(harness, { filename: 'x.png', mimeType: 'image/png' }));
    await expectBadRequest(() => postJson(harness, { data: '', filename: 'x.png' }));
  });

  test('JSON whose data is not base64 answers 400', async () => {
    await expectBadRequest(() => postJson(harness, { data: 'this is *not* base64!', filename: 'x.png' }));
    await expectBadRequest(() => postJson(harness, { data: 'data:image/png;base64,%%%%', filename: 'x.png' }));
  });

  test('multipart without a file part answers 400', async () => {
    const form = new FormData();
    form.append('file', 'just text, no file name');
    form.append('note', 'hello');
    await expectBadRequest(() => postMultipart(harness, form));
  });

  const traversalNames: Array<[string, string]> = [
    ['..%2F..%2Fetc%2Fpasswd', 'an encoded ../../etc/passwd'],
    ['%2e%2e%2fhearth.sqlite', 'an encoded ../hearth.sqlite'],
    ['..%2Foutside.txt', 'an encoded ../ to a file beside the media folder'],
    ['not-a-uuid.png', 'a name that is not in uuid form'],
    ['%2Fetc%2Fpasswd', 'an absolute path'],
  ];
  for (const [name, description] of traversalNames) {
    test(`GET /api/media/:filename with ${description} answers 404 file not found`, async () => {
      const response = await download(harness, name);
      const text = await response.text();
      assert.equal(response.status, 404, text);
      assert.deepEqual(JSON.parse(text), { ok: false, error: 'file not found' });
      assert.ok(!text.includes('root:'), 'leaked /etc/passwd');
      assert.ok(!text.includes('SQLite format'), 'leaked the database');
      assert.ok(!text.includes('TOP-SECRET'), 'leaked a file outside the media folder');
    });
  }

  test('GET /api/media/:filename with the absolute path of a file outside the media folder answers 404', async () => {
    const response = await download(harness, encodeURIComponent(path.join(harness.dataDir, 'outside.txt')));
    const text = await response.text();
    assert.equal(response.status, 404, text);
    assert.deepEqual(JSON.parse(text), { ok: false, error: 'file not found' });
  });

  test('GET /api/media/:filename of an unknown uuid answers 404 file not found', async () => {
    const response = await download(harness, `${randomUUID()}.png`);
    assert.equal(response.status, 404);
    assert.deepEqual(await response.json(), { ok: false, error: 'file not found' });
    const bare = await download(harness, randomUUID());
    assert.equal(bare.status, 404);
  });

  test('GET /api/media/:filename never serves a temporary .<uuid>.part file', async () => {
    const id = randomUUID();
    await writeFile(path.join(mediaDir(harness), `.${id}.part`), 'half an upload');
    const response = await download(harness, `.${id}.part`);
    assert.equal(response.status, 404);
    assert.deepEqual(await response.json(), { ok: false, error: 'file not found' });
  });
});

describe('media expiry (7 days)', () => {
  let harness: RelayHarness;

  before(async () => {
    harness = await startRelay();
  });

  after(async () => {
    await harness.cleanup();
  });

  async function upload(name: string): Promise<{ result: UploadResult; bytes: Buffer }> {
    const bytes = randomBytes(500);
    return { result: await expectUploaded(await postRaw(harness, bytes, { filename: name })), bytes };
  }

  async function ageFile(fileName: string, ageMs: number): Promise<void> {
    const when = new Date(Date.now() - ageMs);
    await utimes(path.join(mediaDir(harness), fileName), when, when);
  }

  test('a file younger than 7 days is kept by the sweep', async () => {
    const { result, bytes } = await upload('young.png');
    await harness.relay.context.media.sweep(Date.now() + 7 * day - minute);
    assert.ok((await mediaFiles(harness)).includes(result.fileName));
    assert.ok(await mediaRow(harness, result.id));
    await expectDownload(harness, result.fileName, bytes);
  });

  test('a file older than 7 days is removed with its row by the sweep and its download answers 404', async () => {
    const { result, bytes } = await upload('old.png');
    await expectDownload(harness, result.fileName, bytes);
    await harness.relay.context.media.sweep(Date.now() + 7 * day + minute);
    assert.ok(!(await mediaFiles(harness)).includes(result.fileName), 'expired file still on disk');
    assert.equal(await mediaRow(harness, result.id), undefined);
    const response = await download(harness, result.fileName);
    assert.equal(response.status, 404);
    assert.deepEqual(await response.json(), { ok: false, error: 'file not found' });
  });

  test('the sweep removes only the expired files', async () => {
    const old = await upload('expired.jpg');
    const young = await upload('fresh.jpg');
    await harness.relay.context.database.db
      .updateTable('relay_media')
      .set({ created_at: Date.now() - 8 * day })
      .where('id', '=', old.result.id)
      .execute();
    await ageFile(old.result.fileName, 8 * day);
    await harness.relay.context.media.sweep();
    const files = await mediaFiles(harness);
    assert.ok(!files.includes(old.result.fileName));
    assert.equal(await mediaRow(harness, old.result.id), undefined);
    assert.ok(files.includes(young.result.fileName));
    assert.ok(await mediaRow(harness, young.result.id));
    await expectDownload(harness, young.result.fileName, young.bytes);
  });

  test('a file whose mtime is 8 days old answers 404 even before any sweep', async () => {
    const { result, bytes } = await upload('stale.png');
    await expectDownload(harness, result.fileName, bytes);
    await ageFile(result.fileName, 8 * day);
    const response = await download(harness, result.fileName);
    assert.equal(response.status, 404);
    assert.deepEqual(await response.json(), { ok: false, error: 'file not found' });
  });

  test('a leftover .<uuid>.part temp file older than 7 days is removed by the sweep, a recent one is kept', async () => {
    const stale = `.${randomUUID()}.part`;
    const recent = `.${randomUUID()}.part`;
    await writeFile(path.join(mediaDir(harness), stale), 'interrupted upload');
    await writeFile(path.join(mediaDir(harness), recent), 'upload in progress');
    await ageFile(stale, 7 * day + minute);
    await harness.relay.context.media.sweep();
    const files = await mediaFiles(harness);
    assert.ok(!files.includes(stale), 'stale temp file kept');
    assert.ok(files.includes(recent), 'recent temp file removed');
  });

  test('expired files are swept at start-up', async () => {
    const { result } = await upload('boot.png');
    await harness.relay.context.database.db
      .updateTable('relay_media')
      .set({ created_at: Date.now() - 8 * day })
      .where('id', '=', result.id)
      .execute();
    await ageFile(result.fileName, 8 * day);
    await harness.stop();
    harness = await startRelay({ reuse: harness });
    assert.ok(!(await mediaFiles(harness)).includes(result.fileName));
    assert.equal(await mediaRow(harness, result.id), undefined);
  });
});

describe('media metadata persistence and public base URL', () => {
  const publicBase = 'https://media.example.test/relay';
  let harness: RelayHarness;

  before(async () => {
    harness = await startRelay({ env: { RELAY_PUBLIC_BASE_URL: `${publicBase}/` } });
  });

  after(async () => {
    await harness.cleanup();
  });

  test('upload result: url comes from RELAY_PUBLIC_BASE_URL when set', async () => {
    const result = await expectUploaded(await postRaw(harness, randomBytes(10), { filename: 'a.svg' }));
    assert.equal(result.url, `${publicBase}/api/media/${result.fileName}`);
  });

  test('the media row and the file survive a restart: download still works', async () => {
    const bytes = randomBytes(5000);
    const result = await expectUploaded(
      await postRaw(harness, bytes, { contentType: 'image/svg+xml', filename: 'Logo.SVG' }),
    );
    assert.ok(await mediaRow(harness, result.id));
    await harness.stop();
    harness = await startRelay({ reuse: { dataDir: harness.dataDir, env: harness.env } });
    const row = await mediaRow(harness, result.id);
    assert.ok(row, 'relay_media row lost on restart');
    assert.equal(row.file_name, result.fileName);
    assert.equal(Number(row.size), bytes.length);
    const response = await expectDownload(harness, result.fileName, bytes);
    assert.equal(response.headers.get('content-type'), 'image/svg+xml');
    assert.equal(response.headers.get('cache-control'), 'public, max-age=86400');
  });
});
