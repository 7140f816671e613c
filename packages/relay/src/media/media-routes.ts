import { createReadStream } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { type Static, Type } from 'typebox';
import type { RelayContext } from '../context.js';
import { NotFoundError } from '../errors.js';
import { discardRequestBody, receiveUpload } from './upload-forms.js';

const UploadQuery = Type.Object({ filename: Type.Optional(Type.String()) }, { additionalProperties: true });
const DownloadParams = Type.Object({ filename: Type.String() });

/** Upload (authenticated, streamed to disk under the size limit) and public download. */
export async function mediaRoutes(app: FastifyInstance, context: RelayContext): Promise<void> {
  const { media, auth, config, metrics } = context;

  // Bodies here are read by the upload code itself, as a stream, whatever their type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));

  app.post<{ Querystring: Static<typeof UploadQuery> }>(
    '/api/media/upload',
    { schema: { querystring: UploadQuery } },
    async (request) => {
      try {
        await auth.requireMediaUploader(request);
      } catch (error) {
        await discardRequestBody(request.raw);
        throw error;
      }
      const stored = await receiveUpload(request.raw, request.query, media);
      metrics.mediaBytesUploaded.inc(stored.size);
      const base = config.publicBaseUrl ?? `${request.protocol}://${request.host}`;
      request.log.info({ fileName: stored.fileName, size: stored.size }, 'media stored');
      return { ok: true, ...stored, url: `${base}/api/media/${stored.fileName}` };
    },
  );

  app.get<{ Params: Static<typeof DownloadParams> }>(
    '/api/media/:filename',
    { schema: { params: DownloadParams } },
    async (request, reply) => {
      const file = await media.resolve(request.params.filename);
      if (!file) throw new NotFoundError('file not found');
      metrics.mediaBytesDownloaded.inc(file.size);
      return reply
        .headers({
          'content-type': file.mimeType,
          'content-length': String(file.size),
          'cache-control': 'public, max-age=86400',
          // Uploaded SVGs and PDFs can carry script; never let a browser run it on our origin.
          'x-content-type-options': 'nosniff',
          'content-security-policy': "sandbox; default-src 'none'",
        })
        .send(createReadStream(file.path));
    },
  );
}
