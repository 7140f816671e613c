import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { ConnectionHub } from '../ws/connection-hub.js';

export type Endpoint = 'backend' | 'client';

/**
 * The relay's Prometheus metrics, in a registry of its own so several relays in one
 * process (tests, `hearth start`) do not share counters. Hot-path counters are bound to
 * their labels once, so counting a frame costs no label lookup.
 */
export class RelayMetrics {
  readonly registry = new Registry();
  readonly framesToBackend: Counter.Internal;
  readonly framesToClients: Counter.Internal;
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
    const frames = new Counter({
      name: 'relay_frames_relayed_total',
      help: 'Frames relayed, by direction.',
      labelNames: ['direction'],
      registers: [this.registry],
    });
    this.framesToBackend = frames.labels('to_backend');
    this.framesToClients = frames.labels('to_client');
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
