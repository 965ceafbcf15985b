// ESLint flat config. `npm run lint` runs it over the source and test trees (and `prettier --check .`).
// Two layers:
//   1. typescript-eslint's recommended rules for all TypeScript and JavaScript here, tests included.
//   2. Size, complexity and import-direction rules as errors for the shipped and benchmark code
//      (src/, transports/, native/js/, native/loader.ts, benchmarking/), not for tests.
// Every file meets them: there is no list of exceptions, and a rule is turned off for one line only, with an
// `eslint-disable-next-line <rule> -- <why>` where the code is deliberate.
// The rules are typescript-eslint's non-type-checked `recommended` set, with none of its rules turned off. The type-checked set is not used: on a 2-core
// machine it took 90 s of CPU (5 minutes wall under shared load) against 20 s for this set, and it adds some
// 560 findings, mostly no-unsafe-* on values typed `any` (JSON, Redis replies, zod internals).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

/** Shipped and benchmark code: what the size and import rules hold to. Test files inside these trees are not. */
const SOURCE = ['src/**/*.ts', 'transports/**/*.ts', 'native/js/**/*.ts', 'native/*.ts', 'benchmarking/**/*.{ts,mjs}'];
const TESTS = ['**/*.test.ts', 'test/**/*.{ts,mjs,cjs}'];

// The Node globals the plain .mjs/.cjs files use (the TypeScript files get theirs from @types/node, and
// no-undef is off for them as typescript-eslint advises).
const NODE_GLOBALS = Object.fromEntries(
  ['process', 'console', 'Buffer', 'URL', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'queueMicrotask', 'Atomics', 'SharedArrayBuffer', 'performance'].map((g) => [
    g,
    'readonly',
  ]),
);
const CJS_GLOBALS = { ...NODE_GLOBALS, require: 'readonly', module: 'writable', exports: 'writable', __filename: 'readonly', __dirname: 'readonly' };

/**
 * An optional peer dependency is imported only by its own subpath's tree (src/otel/ for @opentelemetry/api), so
 * `eventlane` never loads one.
 */
const OPTIONAL_PEERS = { regex: '^@opentelemetry/', message: 'Only eventlane/otel (src/otel/) imports @opentelemetry/*, an optional peer dependency.' };

/**
 * The import direction. `no-restricted-imports` sees static `import`/`export ... from` (type-only ones too);
 * `no-restricted-syntax` covers what it does not: `import()` expressions, `import('...')` types and `require()`.
 * Specifiers are matched as written (relative paths), so each tree's regexes assume its own depth.
 */
function importDirection(rules) {
  const restrictedSyntax = [];
  for (const { regex, message } of rules) {
    const re = `/${regex.replaceAll('/', '\\x2F')}/`; // esquery's regex literal cannot hold a `/`
    restrictedSyntax.push(
      { selector: `ImportExpression[source.value=${re}]`, message },
      { selector: `TSImportType[argument.literal.value=${re}]`, message },
      { selector: `CallExpression[callee.name='require'][arguments.0.value=${re}]`, message },
    );
  }
  return {
    'no-restricted-imports': ['error', { patterns: rules.map(({ regex, message }) => ({ regex, message })) }],
    'no-restricted-syntax': ['error', ...restrictedSyntax],
  };
}

export default tseslint.config(
  {
    ignores: ['dist/', '.bench-build/', 'node_modules/', 'prebuilds/', 'native/build/', 'bench-results/', 'tmp/', '.prof/'],
  },

  // ---- 1. Recommended rules, everywhere ----
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: { sourceType: 'module', globals: NODE_GLOBALS },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: CJS_GLOBALS },
  },
  {
    rules: {
      // `_name` marks a parameter or binding kept on purpose (a signature to match, a caught error);
      // a rest sibling is how an object drops a key (`const { a, ...rest } = o`).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true }],
      // @ts-ignore is allowed with a reason: the same file builds as ES modules and as CommonJS, and a line that
      // is an error in only one build (`import.meta`) cannot take @ts-expect-error, which fails the other.
      '@typescript-eslint/ban-ts-comment': ['error', { 'ts-ignore': 'allow-with-description', minimumDescriptionLength: 3 }],
    },
  },
  {
    files: TESTS,
    rules: {
      // Tests feed validators and codecs holey arrays (`[true, , true]`) on purpose.
      'no-sparse-arrays': 'off',
    },
  },

  // ---- 2. Size, complexity and import direction, for the non-test code ----
  {
    files: SOURCE,
    ignores: TESTS,
    rules: {
      // Counted without blank lines and comments: the code explains itself in long comments, and those
      // should not push a file over; 400 lines of code is the limit that matters.
      'max-lines': ['error', { max: 400, skipBlankLines: true, skipComments: true }],
      'max-lines-per-function': ['error', { max: 60, skipBlankLines: true, skipComments: true, IIFEs: true }],
      complexity: ['error', 15],
      'max-depth': ['error', 4],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: [...TESTS, 'src/builtin-transports.ts', 'src/otel/**'],
    rules: importDirection([
      { regex: '^(\\.\\./)+transports(/|$)', message: 'The core does not import transports/: only src/builtin-transports.ts registers the built-ins.' },
      { regex: '^(\\.\\./)+benchmarking(/|$)', message: 'The core does not import benchmarking/.' },
      { regex: '^(\\.\\./)+test(/|$)', message: 'The core does not import test/.' },
      OPTIONAL_PEERS,
    ]),
  },
  {
    // eventlane/otel: the one tree that imports its optional peer (@opentelemetry/api).
    files: ['src/otel/**/*.ts'],
    ignores: TESTS,
    rules: importDirection([
      { regex: '^(\\.\\./)+transports(/|$)', message: 'eventlane/otel does not import transports/: it reads the diagnostics channels.' },
      { regex: '^(\\.\\./)+benchmarking(/|$)', message: 'The core does not import benchmarking/.' },
      { regex: '^(\\.\\./)+test(/|$)', message: 'The core does not import test/.' },
    ]),
  },
  {
    files: ['src/builtin-transports.ts'],
    rules: importDirection([
      { regex: '^(\\.\\./)+benchmarking(/|$)', message: 'The core does not import benchmarking/.' },
      { regex: '^(\\.\\./)+test(/|$)', message: 'The core does not import test/.' },
      OPTIONAL_PEERS,
    ]),
  },
  {
    // transports/<name>/*.ts: `../<other>/` is another transport (transports have no subdirectories; a
    // transport that grows one needs this regex revisited). Tests are left out: they may use test/helpers.
    files: ['transports/**/*.ts'],
    ignores: TESTS,
    rules: importDirection([
      { regex: '^\\.\\./(?!\\.\\.(/|$))[^/]+', message: 'A transport does not import another transport: share code through src/.' },
      { regex: '^(\\.\\./)+transports(/|$)', message: 'A transport does not import another transport: share code through src/.' },
      { regex: '^(\\.\\./)+benchmarking(/|$)', message: 'transports/ does not import benchmarking/.' },
      { regex: '^(\\.\\./)+test(/|$)', message: 'transports/ does not import test/.' },
      OPTIONAL_PEERS,
    ]),
  },
  {
    files: ['native/js/**/*.ts', 'native/*.ts'],
    rules: importDirection([
      { regex: '^(\\.\\./)+transports(/|$)', message: 'native/ does not import transports/ (the native transport imports native/, not the other way).' },
      { regex: '^(\\.\\./)+benchmarking(/|$)', message: 'native/ does not import benchmarking/.' },
      { regex: '^(\\.\\./)+test(/|$)', message: 'native/ does not import test/.' },
    ]),
  },

  // Formatting is Prettier's: turn off every ESLint rule that would argue with it.
  prettier,
);
