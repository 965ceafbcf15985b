/**
 * What the compiler says to a user's mistakes: a wrong event name lists the declared names, not the zod map
 * type. Compiles a snippet against the sources with the project's compiler options.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
// Inside the repository, so the snippet resolves `zod` from its node_modules.
const dir = mkdtempSync(join(root, 'test/types/.snippet-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The compiler's messages for `body`, written after a two-event map and a memory bus. */
function diagnostics(body: string): string[] {
  const file = join(dir, 'snippet.ts');
  const index = JSON.stringify(join(root, 'src/index.js'));
  writeFileSync(
    file,
    `import { z } from 'zod';
import { createEventBus, defineEvents } from ${index};
const events = defineEvents({ 'order.created': z.object({ orderId: z.string() }), 'user.signed-up': z.object({ email: z.string() }) });
export async function run(): Promise<void> {
  const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' } });
  ${body}
}
`,
  );
  const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.test.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })!;
  const program = ts.createProgram([file], { ...config.options, noEmit: true, typeRoots: [join(root, 'node_modules/@types')], baseUrl: root });
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

describe('compile-time messages', () => {
  it('a wrong event name lists the declared names', () => {
    const messages = diagnostics(`await bus.publish('order.create', { orderId: 'x' });
  await bus.subscribe('user.signedup', { group: 'g' }, async () => {});`);
    expect(messages).toHaveLength(2);
    for (const m of messages) {
      expect(m).toContain(`parameter of type '"order.created" | "user.signed-up"'`);
      expect(m).not.toContain('Zod');
    }
  });
}, 60_000);
