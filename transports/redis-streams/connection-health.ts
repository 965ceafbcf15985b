/**
 * The connection side of `bus.health()` for Redis: whether every client the transport opened is up, since
 * when, and the last error a client reported (credentials stripped). Read from the clients' own state, with no
 * round trip. A client closed on purpose (`end`) stops counting; one created and not yet asked to connect
 * (`wait`) does not count yet.
 */
import type { HealthError, TransportHealth } from '../../src/health.js';
import { redactUrls } from '../../src/redact.js';
import type { Client } from './connection.js';

export class ConnectionHealth {
  private readonly clients = new Set<Client>();
  private connected = true;
  private since = Date.now();
  private lastError: HealthError | undefined;

  /** Counts `client` until it ends. */
  watch(client: Client): void {
    this.clients.add(client);
    const update = (): void => this.update();
    client.on('ready', update);
    client.on('close', update);
    client.on('reconnecting', update);
    client.on('end', () => {
      this.clients.delete(client);
      this.update();
    });
    client.on('error', (err: Error) => {
      this.lastError = { name: err.name, message: redactUrls(err.message), at: Date.now() };
    });
  }

  report(): Omit<TransportHealth, 'type'> {
    this.update();
    return { connected: this.connected, since: this.since, lastError: this.lastError };
  }

  private update(): void {
    let up = true;
    for (const c of this.clients) if (c.status !== 'ready' && c.status !== 'wait') up = false;
    if (up === this.connected) return;
    this.connected = up;
    this.since = Date.now();
  }
}
