import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { ConnectionHub } from '../ws/connection-hub.js';

export type Endpoint = 'backend' | 'client';

/**
 * The relay's Prometheus metrics, in a registry of its own so several relays in one
 * process (tests, `hearth start`) do not share counters. Relayed frames are counted in
 * plain integers and handed to prom-client only when /metrics is read: a labelled
 * `inc()` per frame showed up in the relay's profile.
 */
export class RelayMetrics {
  readonly registry = new Registry();
  readonly frames = { toBackend: 0, toClients: 0 };
  readonly mediaBytesUploaded: Counter.Internal;
  readonly mediaBytesDownloaded: Counter.Internal;
  private readonly closes: Counter<'endpoint' | 'code'>;

  constructor(hub: ConnectionHub) {
    collectDefaultMetrics({ register: this.registry, prefix: 'relay_' });
    new Gauge({
      name: 'relay_connections',
      help: 'Open WebSocket connections on this node.',
      labelNames: ['endpoint'],
      registers: [this.registry],
      collect() {
        this.set({ endpoint: 'backend' }, hub.backendCount);
        this.set({ endpoint: 'client' }, hub.clientCount);
      },
    });
    const frames = this.frames;
    new Counter({
      name: 'relay_frames_relayed_total',
      help: 'Frames relayed, by direction.',
      labelNames: ['direction'],
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc({ direction: 'to_backend' }, frames.toBackend);
        this.inc({ direction: 'to_client' }, frames.toClients);
      },
    });
    this.closes = new Counter({
      name: 'relay_closes_total',
      help: 'WebSocket connections closed, by endpoint and close code.',
      labelNames: ['endpoint', 'code'],
      registers: [this.registry],
    });
    const mediaBytes = new Counter({
      name: 'relay_media_bytes_total',
      help: 'Media bytes stored by uploads and served by downloads.',
      labelNames: ['direction'],
      registers: [this.registry],
    });
    this.mediaBytesUploaded = mediaBytes.labels('upload');
    this.mediaBytesDownloaded = mediaBytes.labels('download');
  }

  countClose(endpoint: Endpoint, code: number): void {
    this.closes.inc({ endpoint, code: String(code) });
  }
}
