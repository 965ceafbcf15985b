/**
 * A service that can be run in production and watched: Prometheus metrics on /metrics, a readiness probe on
 * /healthz, OpenTelemetry spans (printed by the console exporter here; an OTLP exporter in a real service),
 * and failures in the log with no logger configured.
 *
 * Run: npm run example:observability            (memory transport)
 *      REDIS_URL=redis://127.0.0.1:6379 npx tsx examples/observability.ts
 * then: curl localhost:9464/metrics; curl localhost:9464/healthz; Ctrl-C to stop.
 * PORT sets the port (0: any free one; the address is printed).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConsoleSpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { Registry } from 'prom-client';
import { z } from 'zod';
import { createEventBus, defineEvents } from '../src/index.js';
import { instrumentEventlane } from '../src/otel/index.js';
import { eventlaneMetrics } from '../src/prometheus/index.js';

// 1. Tracing: the SDK first (its context manager and W3C propagator), then eventlane's instrumentation.
const tracing = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new ConsoleSpanExporter())] });
tracing.register();
const otel = instrumentEventlane();

const events = defineEvents({
  'order.placed': z.object({ orderId: z.string(), amount: z.number().positive() }),
});

const redisUrl = process.env['REDIS_URL'];
const bus = await createEventBus({
  service: 'checkout',
  events,
  transport: redisUrl ? { type: 'redis-streams', url: redisUrl, prefix: `example-obs-${Date.now().toString(36)}`, partitions: 2 } : { type: 'memory', partitions: 2 },
});

// 2. Metrics: eventlane's collector on the service's registry, reading this bus at scrape time.
const registry = new Registry();
const metrics = eventlaneMetrics({ registry, buses: [bus] });

// 3. A consumer: order o-7 always fails, is retried, then dead-lettered (logged to stderr at warn).
await bus.subscribe('order.placed', { group: 'billing', maxDeliveries: 2, retry: { backoff: { initialMs: 20 } } }, async (e) => {
  if (e.data.orderId === 'o-7') throw new Error(`card declined for ${e.data.orderId}`);
});

// 4. The endpoints: /metrics for Prometheus, /healthz for a readiness probe (no round trip to the broker).
const server = createServer((req, res) => {
  if (req.url === '/metrics') {
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (err: Error) => res.writeHead(500).end(err.message),
    );
  } else if (req.url === '/healthz') {
    const health = bus.health();
    res.writeHead(health.ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(health));
  } else {
    res.writeHead(404).end();
  }
});
await new Promise<void>((resolve) => server.listen(Number(process.env['PORT'] ?? 9464), '127.0.0.1', resolve));
console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);

await bus.publishMany(
  'order.placed',
  Array.from({ length: 20 }, (_, i) => ({ orderId: `o-${i}`, amount: 10 + i })),
);

// 5. Shutdown in order: stop taking requests, then the bus (drains handlers), then the telemetry.
async function shutdown(): Promise<void> {
  server.close();
  await bus.close();
  metrics.close();
  otel.disable();
  await tracing.shutdown();
  console.log('closed');
}
process.once('SIGINT', () => void shutdown());
process.once('SIGTERM', () => void shutdown());
