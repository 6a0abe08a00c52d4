import {
  ConfigurableModuleBuilder,
  type ConfigurableModuleAsyncOptions,
  type DynamicModule,
  type Type,
} from '@nestjs/common';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';

/** `forRoot` / `forRootAsync` of an exporter module, and its options checked at bootstrap. */
export function exportModuleDefinition<O extends object, F extends string>(
  name: string,
  factoryMethodName: F,
  describeProblems: (options: unknown) => string[],
) {
  const { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN } = new ConfigurableModuleBuilder<O>({ moduleName: name })
    .setClassMethodName('forRoot')
    .setFactoryMethodName(factoryMethodName)
    .build();
  return {
    OPTIONS: MODULE_OPTIONS_TOKEN,
    checked(options: O | undefined): O {
      const problems = describeProblems(options ?? {});
      if (problems.length > 0) throw new RateLimitConfigError(problems, `${name}Module`);
      return options ?? ({} as O);
    },
    forRoot: (module: Type, options: O): DynamicModule => ({ ...ConfigurableModuleClass.forRoot(options), module }),
    forRootAsync: (module: Type, options: ConfigurableModuleAsyncOptions<O, F>): DynamicModule => ({
      ...ConfigurableModuleClass.forRootAsync(options),
      module,
    }),
  };
}
