import type { FastifyInstance } from 'fastify';
import { type Static, Type } from 'typebox';
import type { ChannelInput } from '../channels/channel-directory.js';
import { userView } from '../channels/channel-model.js';
import type { RelayContext } from '../context.js';
import { BadRequestError } from '../errors.js';
import { channelView } from './channel-view.js';

const UserBody = Type.Object({
  senderId: Type.String(),
  chatId: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  token: Type.Optional(Type.String()),
  allowAgents: Type.Optional(Type.Union([Type.Array(Type.String()), Type.String(), Type.Null()])),
  enabled: Type.Optional(Type.Boolean()),
});

/** The reference shape (channelId, label, secret) or the quick-start one (id, name, users). */
const ChannelBody = Type.Object({
  channelId: Type.Optional(Type.String()),
  id: Type.Optional(Type.String()),
  label: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  name: Type.Optional(Type.String()),
  secret: Type.Optional(Type.String()),
  tokenParam: Type.Optional(Type.String()),
  users: Type.Optional(Type.Array(UserBody)),
});

const ChannelParams = Type.Object({ channelId: Type.String() });
const UserParams = Type.Object({ channelId: Type.String(), senderId: Type.String() });

/** Channel and user administration: every write persists first, then drops invalidated sockets. */
export async function channelRoutes(app: FastifyInstance, context: RelayContext): Promise<void> {
  const { directory, hub, auth } = context;
  app.addHook('onRequest', (request) => auth.requireAdmin(request));

  app.post<{ Body: Static<typeof ChannelBody> }>(
    '/api/channels',
    { schema: { body: ChannelBody } },
    async (request) => {
      const body = request.body;
      const channelId = body.channelId ?? body.id;
      if (!channelId) throw new BadRequestError('channelId is required');
      const input: ChannelInput = {
        channelId,
        label: body.label !== undefined ? body.label : body.name,
        secret: body.secret,
        tokenParam: body.tokenParam,
        users: body.users,
      };
      const channel = await directory.saveChannel(input);
      return { ok: true, channel: channelView(channel, hub) };
    },
  );

  app.delete<{ Params: Static<typeof ChannelParams> }>(
    '/api/channels/:channelId',
    { schema: { params: ChannelParams } },
    async (request) => {
      await directory.deleteChannel(request.params.channelId);
      return { ok: true, channelId: request.params.channelId };
    },
  );

  app.post<{ Params: Static<typeof ChannelParams>; Body: Static<typeof UserBody> }>(
    '/api/channels/:channelId/users',
    { schema: { params: ChannelParams, body: UserBody } },
    async (request) => {
      const { channel, user } = await directory.saveUser(request.params.channelId, request.body);
      return { ok: true, channel: channelView(channel, hub), user: userView(user) };
    },
  );

  app.delete<{ Params: Static<typeof UserParams> }>(
    '/api/channels/:channelId/users/:senderId',
    { schema: { params: UserParams } },
    async (request) => {
      const channel = await directory.deleteUser(request.params.channelId, request.params.senderId);
      return { ok: true, channel: channelView(channel, hub), senderId: request.params.senderId };
    },
  );
}
