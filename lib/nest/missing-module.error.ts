import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';

/** The error of a guard where `RateLimitModule` cannot be injected (not imported, or not global). */
export function missingModuleError(guard: string): RateLimitConfigError {
  return new RateLimitConfigError(
    [
      `${guard} needs RateLimitModule: import RateLimitModule.forRoot(…) or forRootAsync(…) in the application's ` +
        'root module (registered with isGlobal: false, import it in every module that uses the guard); ' +
        'see docs/nest.md, "Registering the module"',
    ],
    guard,
  );
}
