import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      'no-console': 'error',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  // Examples are programs people run: they print their URL, curl lines and the demo's table.
  { files: ['examples/**', 'bench/**'], rules: { 'no-console': 'off' } },
  // Plain Node scripts (lockfile completion, example launcher, profile summary).
  {
    files: ['**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', Buffer: 'readonly' } },
    rules: { 'no-console': 'off' },
  },
  // A package's bin: a CommonJS script that loads the build (packages/cli/bin/floodgate.js).
  {
    files: ['packages/*/bin/**'],
    languageOptions: { sourceType: 'commonjs', globals: { process: 'readonly', console: 'readonly', require: 'readonly' } },
    rules: { 'no-console': 'off', '@typescript-eslint/no-require-imports': 'off' },
  },
  // test/pack.test.ts's consumers: programs as a user writes them (the CommonJS ones with require()).
  {
    files: ['test/pack-consumer/**'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', fetch: 'readonly', require: 'readonly' } },
    rules: { 'no-console': 'off', '@typescript-eslint/no-require-imports': 'off' },
  },
);
