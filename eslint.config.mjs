// ESLint (flat config): typescript-eslint's type-checked rules for the package (lib/), the plain
// recommended ones elsewhere; formatting is Prettier's job (eslint-config-prettier turns off the rules
// that would fight it).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'dist-sample/', 'coverage/', 'node_modules/', 'bench/results/'] },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommended],
    rules: {
      // A leading underscore marks a parameter a signature needs but this implementation does not
      // read (a hook's context, a decorated body): the usual convention, stated once here.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['lib/**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // Rethrowing what was caught (typed unknown) as a rejection is allowed; rejecting with a
      // non-Error value of our own is still reported.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
    },
  },
  {
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    languageOptions: { globals: { ...globals.node } },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    ignores: ['**/*.mjs'],
    languageOptions: { sourceType: 'commonjs' },
  },
  prettier,
);
