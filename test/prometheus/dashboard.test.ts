/**
 * The Grafana dashboard shipped in docs/grafana/ queries what the collector exposes: every series it names is
 * one a real registry serves after eventlane published, handled and failed events, with the labels the queries
 * group by.
 */
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents } from '../../src/index.js';
import { eventlaneMetrics } from '../../src/prometheus/index.js';
import { uniqueName } from '../helpers/wait.js';

interface Panel {
  title: string;
  targets: { expr: string }[];
}

const dashboard = JSON.parse(readFileSync(new URL('../../docs/grafana/eventlane-dashboard.json', import.meta.url), 'utf8')) as { panels: Panel[] };

/** Each `eventlane_...` series an expression reads, with the labels it groups by (`by (...)`). */
function seriesOf(expr: string): { names: string[]; by: string[] } {
  const names = [...expr.matchAll(/\b(eventlane_[a-z_]+)/g)].map((m) => m[1]!);
  const by = [...expr.matchAll(/by \(([^)]*)\)/g)].flatMap((m) => m[1]!.split(',').map((l) => l.trim()));
  return { names, by: by.filter((l) => l !== 'le' && l !== 'instance') };
}

describe('docs/grafana/eventlane-dashboard.json', () => {
  it('queries only series the collector serves, grouped by labels they carry', async () => {
    const events = defineEvents({ 'order.placed': z.object({ n: z.number() }) });
    const bus = await createEventBus({ service: 'dash', events, logger: false, transport: { type: 'memory', name: uniqueName('dash') } });
    const registry = new Registry();
    const metrics = eventlaneMetrics({ registry, buses: [bus] });
    try {
      await bus.subscribe('order.placed', { group: 'g', maxDeliveries: 2, retry: { backoff: { initialMs: 1 } } }, (e) => {
        if (e.data.n === 0) throw new Error('fails');
      });
      await bus.publishMany('order.placed', [{ n: 0 }, { n: 1 }, { n: 2 }]);
      await expect(bus.publish('order.placed', { n: 'not a number' } as never)).rejects.toThrow();
      await bus.idle({ timeoutMs: 5000 });
      const served = await registry.getMetricsAsJSON();
      const labelsOf = new Map<string, Set<string>>();
      for (const m of served) {
        for (const v of m.values) {
          const name = (v as { metricName?: string }).metricName ?? m.name;
          const set = labelsOf.get(name) ?? new Set<string>();
          for (const l of Object.keys(v.labels)) set.add(l);
          labelsOf.set(name, set);
        }
      }
      // The reclaim counter has series on Redis only; its name is still registered.
      const registered = new Set(served.map((m) => m.name));
      expect(dashboard.panels.length).toBeGreaterThan(5);
      for (const panel of dashboard.panels) {
        for (const t of panel.targets) {
          const { names, by } = seriesOf(t.expr);
          expect(names.length, `${panel.title}: ${t.expr}`).toBeGreaterThan(0);
          for (const name of names) {
            const base = name.replace(/_(bucket|sum|count)$/, '');
            expect(registered.has(base) || registered.has(name), `${panel.title}: ${name} is not registered`).toBe(true);
            const labels = labelsOf.get(name) ?? labelsOf.get(base);
            if (labels === undefined) continue;
            for (const l of by) expect(labels.has(l), `${panel.title}: ${name} has no label ${l}`).toBe(true);
          }
        }
      }
    } finally {
      metrics.close();
      await bus.close();
    }
  });
});
