import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/*
 * The layers of @floodgate/core (docs/design.md, section 3): a folder of packages/core/src imports only the
 * folders before it, and never an entry point (index.ts, adapter.ts, admin.ts, testing.ts: they import the layers).
 * Node's http module is imported by http/node.ts alone. packages/core/test/layering.test.ts checks the
 * same order over every import, type imports included, and that no two files import each other.
 */
const CORE_LAYERS = ['kernel', 'config', 'scripts', 'stores', 'engine', 'http'];
const NODE_HTTP = ['node:http', 'http'].map((name) => ({
  name,
  message: "Node's http is imported in packages/core/src/http/node.ts only (an adapter without a ServerResponse never meets it).",
}));
function coreLayerRule(layer, nodeHttp = NODE_HTTP) {
  const later = CORE_LAYERS.slice(CORE_LAYERS.indexOf(layer) + 1);
  const patterns = [
    {
      regex: '^(\\.\\./)+(index|adapter|admin|testing)$',
      message: 'The entry points import the layers, never the reverse (docs/design.md, section 3).',
    },
  ];
  if (later.length > 0) {
    patterns.push({
      regex: `^(\\.\\./)+(${later.join('|')})(/|$)`,
      message: `${layer}/ may import ${[...CORE_LAYERS.slice(0, CORE_LAYERS.indexOf(layer)), 'itself'].join(', ')}; never ${later.join(', ')} (docs/design.md, section 3).`,
    });
  }
  return { 'no-restricted-imports': ['error', { paths: nodeHttp, patterns }] };
}
const coreLayers = [
  { files: ['packages/core/src/*.ts'], rules: { 'no-restricted-imports': ['error', { paths: NODE_HTTP }] } },
  ...CORE_LAYERS.map((layer) => ({
    files: [`packages/core/src/${layer}/**/*.ts`],
    rules: coreLayerRule(layer),
  })),
  { files: ['packages/core/src/http/node.ts'], rules: coreLayerRule('http', []) },
];

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/coverage/**', '**/.next/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      'no-console': 'error',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  ...coreLayers,
  // Examples are programs people run: they print their URL, curl lines and the demo's table.
  { files: ['examples/**', 'bench/**'], rules: { 'no-console': 'off' } },
  // Plain Node scripts (lockfile completion, example launcher, profile summary).
  {
    files: ['**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', Buffer: 'readonly' } },
    rules: { 'no-console': 'off' },
  },
  // Next.js apps in plain JavaScript: packages/next/test/app (built and served by next-app.test.ts), packages/next/test/suite-app
  // (the shared suites' app, suite-server.ts), examples/next and bench/next-app.
  {
    files: [
      'packages/next/test/app/**',
      'packages/next/test/suite-app/**',
      'examples/next/*.js',
      'examples/next/app/**',
      'bench/next-app/**',
    ],
    languageOptions: {
      globals: {
        process: 'readonly',
        Response: 'readonly',
        URL: 'readonly',
        ReadableStream: 'readonly',
        setTimeout: 'readonly',
        TextEncoder: 'readonly',
      },
    },
  },
  // A package's bin: a CommonJS script that loads the build (packages/cli/bin/floodgate.js).
  {
    files: ['packages/*/bin/**'],
    languageOptions: { sourceType: 'commonjs', globals: { process: 'readonly', console: 'readonly', require: 'readonly' } },
    rules: { 'no-console': 'off', '@typescript-eslint/no-require-imports': 'off' },
  },
  // The TypeScript loader of the child processes tests start (test/ts-register.cjs): CommonJS, a require hook.
  {
    files: ['test/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  // The bench's probes (bench/scripts/*.cjs: loop-monitor.cjs, loaded with node -r; gc-probe.cjs, run by node): CommonJS.
  {
    files: ['bench/scripts/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        process: 'readonly',
        setInterval: 'readonly',
        setTimeout: 'readonly',
        console: 'readonly',
        __dirname: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  // test/pack.test.ts's consumers: programs as a user writes them (the CommonJS ones with require()).
  {
    files: ['test/pack-consumer/**'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', fetch: 'readonly', require: 'readonly' } },
    rules: { 'no-console': 'off', '@typescript-eslint/no-require-imports': 'off' },
  },
);
