// The layers of lib/ and the direction their imports may point (docs/architecture.md draws them):
//
//   graphql/ websockets/          ready guards for other transports, each its own entry point
//   microservices/                (nestjs-sliding-limit/<folder>), on top of nest/
//   health/ prometheus/           the integrations that need an optional peer, and the testing kit: each
//   opentelemetry/ testing/       its own entry point too (prometheus/ and opentelemetry/ on metrics/)
//   metrics/                      exporters reading a limiter (no Nest)
//   index.ts                      the main entry: what an application uses. The entry points above
//                                 import it by the package's name, as their users do
//   nest/                         the Nest surface
//   limiter/                      SlidingWindowLimiter and its parts (no Nest but its default logger)
//   redis/  memory/               the stores, independent of each other
//   cli/                          the ops CLI: the stores and core, never Nest or the limiter
//   core/                         types, errors and constants every layer shares; imports no layer
//
// Type-only imports count (tsPreCompilationDeps), so a cycle or an upward import cannot hide in a type.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No import cycles in lib/, type-only ones included: every file has a place in one order.',
      from: { path: '^lib/' },
      to: { circular: true },
    },
    {
      name: 'core-imports-no-layer',
      severity: 'error',
      comment: 'core/ is the bottom layer: shared types, errors and constants import nothing above them.',
      from: { path: '^lib/core/' },
      to: { path: '^lib/', pathNot: '^lib/core/' },
    },
    {
      name: 'stores-import-only-core',
      severity: 'error',
      comment: 'The stores (redis/, memory/) know core/ only: the limiter reaches them through core interfaces.',
      from: { path: '^lib/(redis|memory)/' },
      to: { path: '^lib/', pathNot: ['^lib/core/', '^lib/$1/'] },
    },
    {
      name: 'limiter-below-nest-and-integrations',
      severity: 'error',
      comment: 'The limiter works without Nest: it may use the stores and core, never nest/ or the integrations.',
      from: { path: '^lib/limiter/' },
      to: {
        path: '^lib/(nest|health|metrics|prometheus|testing|cli|graphql|websockets|microservices|opentelemetry|index\\.ts)',
      },
    },
    {
      name: 'limiter-nest-free',
      severity: 'error',
      comment: "The limiter's one tie to Nest is its default logger (default-logger.ts), kept in one file.",
      from: { path: '^lib/limiter/', pathNot: '^lib/limiter/default-logger\\.ts$' },
      to: { path: '@nestjs/' },
    },
    {
      name: 'stores-and-core-nest-free',
      severity: 'error',
      comment: 'The stores, core and the CLI never load Nest: the CLI runs without a Nest application.',
      from: { path: '^lib/(core|redis|memory|cli|metrics)/' },
      to: { path: '@nestjs/' },
    },
    {
      name: 'nest-below-integrations',
      severity: 'error',
      comment: 'nest/ does not depend on the optional integrations (health, metrics, testing) or the CLI.',
      from: { path: '^lib/nest/' },
      to: {
        path: '^lib/(health|metrics|prometheus|testing|cli|graphql|websockets|microservices|opentelemetry|index\\.ts)',
      },
    },
    {
      name: 'metrics-reads-the-limiter-only',
      severity: 'error',
      comment: 'Exporters read a limiter (through the main entry); they need neither Nest nor the other integrations.',
      from: { path: '^lib/metrics/' },
      to: {
        path: '^lib/(nest|health|prometheus|testing|cli|graphql|websockets|microservices|opentelemetry)/',
      },
    },
    {
      name: 'entry-points-independent',
      severity: 'error',
      comment:
        'Each subpath entry point loads only its own peer: it imports the main entry (by the package name), ' +
        'never another entry point or the CLI.',
      from: { path: '^lib/(graphql|websockets|microservices|opentelemetry|health|testing|prometheus)/' },
      to: {
        path: '^lib/(graphql|websockets|microservices|opentelemetry|health|testing|prometheus|cli)/',
        pathNot: '^lib/$1/',
      },
    },
    {
      name: 'main-entry-below-entry-points',
      severity: 'error',
      comment: 'The main entry never loads a subpath entry point (each needs a peer an application may not have).',
      from: { path: '^lib/index\\.ts$' },
      to: { path: '^lib/(graphql|websockets|microservices|opentelemetry|health|testing|prometheus|metrics)/' },
    },
    {
      name: 'cli-uses-stores-and-core',
      severity: 'error',
      comment: 'The CLI talks to Redis through the stores and core only; it never boots Nest or a limiter.',
      from: { path: '^lib/cli/' },
      to: { path: '^lib/(nest|limiter|health|metrics|testing|memory|index\\.ts)' },
    },
    {
      name: 'declared-dependencies-only',
      severity: 'error',
      comment: 'lib/ imports only packages that package.json declares (dependencies or peerDependencies).',
      from: { path: '^lib/' },
      to: {
        dependencyTypes: ['npm-dev', 'npm-no-pkg', 'npm-unknown', 'unknown', 'undetermined'],
        dependencyTypesNot: ['npm', 'npm-peer'],
      },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'Every import resolves.',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.build.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
