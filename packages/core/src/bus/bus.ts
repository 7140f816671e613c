/**
 * Messages between the processes of one deployment (for example "channel X changed").
 * Delivery is at most once and only to subscribers alive at publish time: the bus
 * carries notifications, never the only copy of data.
 */
export type BusHandler = (message: unknown) => void;

export interface Bus {
  readonly kind: 'memory' | 'redis';
  publish(topic: string, message: unknown): Promise<void>;
  /** Resolves once the subscription is active; the returned function ends it. */
  subscribe(topic: string, handler: BusHandler): Promise<() => Promise<void>>;
  close(): Promise<void>;
}
