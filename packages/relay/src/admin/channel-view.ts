import type { ChannelRecord } from '../channels/channel-model.js';
import { maskSecret, userView } from '../channels/channel-model.js';
import type { ConnectionHub } from '../ws/connection-hub.js';

/** The Channel object of the seed: stored fields plus this node's live connection state. */
export function channelView(channel: ChannelRecord, hub: ConnectionHub) {
  const backend = hub.backendOf(channel.channelId);
  return {
    channelId: channel.channelId,
    label: channel.label,
    secret: channel.secret,
    secretMasked: maskSecret(channel.secret),
    tokenParam: channel.tokenParam,
    userCount: channel.users.length,
    users: channel.users.map(userView),
    backendConnected: backend !== undefined,
    clientCount: hub.channelClientCount(channel.channelId),
    instanceId: backend?.instanceId ?? channel.instanceId,
    lastConnectedAt: channel.lastConnectedAt,
    lastDisconnectedAt: channel.lastDisconnectedAt,
  };
}

/** The public summary in /healthz: no secrets, no users. */
export function channelHealthView(channel: ChannelRecord, hub: ConnectionHub) {
  const backend = hub.backendOf(channel.channelId);
  return {
    channelId: channel.channelId,
    label: channel.label,
    backendConnected: backend !== undefined,
    clientCount: hub.channelClientCount(channel.channelId),
    instanceId: backend?.instanceId ?? channel.instanceId,
  };
}
