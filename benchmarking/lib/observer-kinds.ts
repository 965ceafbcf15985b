/** The observers of the observability-overhead scenario (set up by observers.ts, loaded only when one runs). */
export type ObserverKind = 'none' | 'prometheus' | 'otel-sampled-out' | 'otel-recorded';
export const OBSERVERS: readonly ObserverKind[] = ['none', 'prometheus', 'otel-sampled-out', 'otel-recorded'];

export const OBSERVER_LABELS: Record<ObserverKind, string> = {
  none: 'nothing subscribed',
  prometheus: 'Prometheus collector',
  'otel-sampled-out': 'OpenTelemetry SDK, spans sampled out',
  'otel-recorded': 'OpenTelemetry SDK, spans recorded (no-op exporter)',
};
