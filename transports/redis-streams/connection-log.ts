/**
 * Logs the state of a Redis connection as it changes: lost (`warn`, once per loss, not per reconnect attempt)
 * and restored (`info`, with how long it was down). A loss is a close the client reconnects after
 * (ioredis's 'reconnecting'): a connection the transport closes itself (close(), replacing a stuck read) is
 * not one.
 */
import type { Logger } from '../../src/logger.js';
import type { Client, Role } from './connection.js';
import { connectionChannel, type ConnectionMessage } from '../../src/diagnostics.js';

function tell(state: ConnectionMessage['state'], role: Role, address: string): void {
  if (connectionChannel.hasSubscribers) connectionChannel.publish({ transport: 'redis-streams', state, role, address } satisfies ConnectionMessage);
}

export function logConnectionState(client: Client, role: Role, address: string, logger: Logger): void {
  let ready = false;
  let lostAt = 0;
  client.on('ready', () => {
    if (lostAt !== 0) {
      logger.info({ role, address, downMs: Date.now() - lostAt }, 'connection to Redis restored');
      tell('restored', role, address);
    }
    ready = true;
    lostAt = 0;
  });
  client.on('reconnecting', () => {
    if (!ready) return;
    ready = false;
    lostAt = Date.now();
    logger.warn({ role, address }, 'connection to Redis lost; reconnecting');
    tell('lost', role, address);
  });
}
