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
  },
  {
    files: ['lib/**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
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
