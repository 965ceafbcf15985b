/**
 * The documentation comments of config options, read from the source: the JSDoc of each property of the
 * `z.object({...})` literals inside a variable's initializer, or of each member of an interface, by dotted path
 * (`retry.backoff.initialMs`). A property's `@default` tag is kept apart from its text.
 */
import { readFileSync } from 'node:fs';
import ts from 'typescript';

export interface OptionDoc {
  readonly text: string;
  readonly default: string | undefined;
  /** The member's declared type, for interface members (options the zod schema does not parse). */
  readonly typeText: string | undefined;
  /** An interface member declared optional (`?`). */
  readonly optional: boolean;
}

export type OptionDocs = Map<string, OptionDoc>;

const oneLine = (s: string | undefined): string => (s ?? '').replace(/\s+/g, ' ').trim();

function docOf(node: ts.Node, typeText: string | undefined, optional = false): OptionDoc | undefined {
  const docs = ts.getJSDocCommentsAndTags(node).filter(ts.isJSDoc);
  if (docs.length === 0) return undefined;
  const doc = docs[docs.length - 1]!;
  const tag = doc.tags?.find((t) => t.tagName.text === 'default');
  return { text: oneLine(ts.getTextOfJSDocComment(doc.comment)), default: tag ? oneLine(ts.getTextOfJSDocComment(tag.comment)) : undefined, typeText, optional };
}

const nameOf = (name: ts.PropertyName): string | undefined => (ts.isIdentifier(name) || ts.isStringLiteral(name) ? name.text : undefined);

/** `z.object({...})`: its object literal argument. */
function objectLiteralOf(node: ts.Node): ts.ObjectLiteralExpression | undefined {
  if (!ts.isCallExpression(node) || !ts.isPropertyAccessExpression(node.expression) || node.expression.name.text !== 'object') return undefined;
  const arg = node.arguments[0];
  return arg !== undefined && ts.isObjectLiteralExpression(arg) ? arg : undefined;
}

function collectSchema(node: ts.Node, prefix: string, out: OptionDocs): void {
  const literal = objectLiteralOf(node);
  if (literal === undefined) {
    node.forEachChild((child) => collectSchema(child, prefix, out));
    return;
  }
  for (const prop of literal.properties) {
    if (!ts.isPropertyAssignment(prop)) continue;
    const name = nameOf(prop.name);
    if (name === undefined) continue;
    const path = prefix + name;
    const doc = docOf(prop, undefined);
    if (doc !== undefined) out.set(path, doc);
    collectSchema(prop.initializer, `${path}.`, out);
  }
}

function collectInterface(members: ts.NodeArray<ts.TypeElement>, prefix: string, file: ts.SourceFile, out: OptionDocs): void {
  for (const member of members) {
    if (!ts.isPropertySignature(member) || member.type === undefined) continue;
    const name = nameOf(member.name);
    if (name === undefined) continue;
    const path = prefix + name;
    const doc = docOf(member, member.type.getText(file).replace(/\s*\|\s*undefined/g, ''), member.questionToken !== undefined);
    if (doc !== undefined) out.set(path, doc);
    member.type.forEachChild((child) => {
      if (ts.isTypeLiteralNode(child)) collectInterface(child.members, `${path}.`, file, out);
    });
    if (ts.isTypeLiteralNode(member.type)) collectInterface(member.type.members, `${path}.`, file, out);
  }
}

/** The docs of the options declared by `name` (a variable holding a zod schema, or an interface) in `file`, under `prefix`. */
export function optionDocs(file: string, name: string, prefix = ''): OptionDocs {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const out: OptionDocs = new Map();
  let found = false;
  source.forEachChild(function visit(node) {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.name.text === name && node.initializer) {
      found = true;
      collectSchema(node.initializer, prefix, out);
    } else if (ts.isInterfaceDeclaration(node) && node.name.text === name) {
      found = true;
      collectInterface(node.members, prefix, source, out);
    } else node.forEachChild(visit);
  });
  if (!found) throw new Error(`${file}: no declaration named ${name}`);
  return out;
}
