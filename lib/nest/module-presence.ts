import {
  Catch,
  Injectable,
  Logger,
  type ExceptionFilter,
  type OnApplicationBootstrap,
  type Type,
} from '@nestjs/common';
import { EXCEPTION_FILTERS_METADATA } from '@nestjs/common/constants';
import { ModulesContainer } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import { RATE_LIMIT_OPTIONS, SLIDING_LIMIT_METADATA } from './rate-limit.constants';

/** Never thrown: the check's `@Catch` needs a type, and no exception may ever match it. */
class NeverThrown {}

/** Applications already checked (one `ModulesContainer` each): a check runs once per application. */
const checked = new WeakSet<ModulesContainer>();

/**
 * Says at start-up that an application carries `@SlidingLimit` without importing `RateLimitModule`
 * (its limits would count nothing). The decorator lists it as an exception filter, the one enhancer
 * Nest instantiates but never calls on a request's way; it catches nothing (`NeverThrown`).
 */
@Catch(NeverThrown)
@Injectable()
export class ModulePresenceCheck implements ExceptionFilter, OnApplicationBootstrap {
  private readonly logger = new Logger('SlidingLimit');

  constructor(private readonly modules: ModulesContainer) {}

  /** Never called: nothing is a `NeverThrown`. */
  catch(): void {}

  onApplicationBootstrap(): void {
    if (checked.has(this.modules)) return;
    checked.add(this.modules);
    const modules = [...this.modules.values()];
    if (modules.some((module) => module.providers.has(RATE_LIMIT_OPTIONS))) return;
    const limited = new Set<string>();
    for (const module of modules) {
      for (const wrapper of [...module.controllers.values(), ...module.providers.values()]) {
        const type = classOf(wrapper);
        if (type && carriesLimits(type)) limited.add(type.name);
      }
    }
    if (limited.size === 0) return;
    this.logger.warn(
      `${[...limited].join(', ')} ${limited.size > 1 ? 'carry' : 'carries'} @SlidingLimit, but the application does not import RateLimitModule, so ` +
        'nothing is limited: import RateLimitModule.forRoot(…) or forRootAsync(…) in the root module ' +
        '(see docs/nest.md, "Registering the module")',
    );
  }
}

/** Lists the check among the exception filters of `type`, once (see {@link ModulePresenceCheck}). */
export function requestModulePresenceCheck(type: object): void {
  const filters = (Reflect.getOwnMetadata(EXCEPTION_FILTERS_METADATA, type) as unknown[] | undefined) ?? [];
  if (!filters.includes(ModulePresenceCheck)) {
    Reflect.defineMetadata(EXCEPTION_FILTERS_METADATA, [...filters, ModulePresenceCheck], type);
  }
}

function classOf(wrapper: InstanceWrapper): Type | undefined {
  return typeof wrapper.metatype === 'function' && !wrapper.inject ? (wrapper.metatype as Type) : undefined;
}

/** Whether `type` or one of its methods carries `@SlidingLimit` of its own. */
function carriesLimits(type: Type): boolean {
  if (Reflect.hasOwnMetadata(SLIDING_LIMIT_METADATA, type)) return true;
  const prototype = type.prototype as object | undefined;
  if (!prototype) return false;
  return Object.values(Object.getOwnPropertyDescriptors(prototype)).some(
    (descriptor) =>
      typeof descriptor.value === 'function' &&
      Reflect.hasOwnMetadata(SLIDING_LIMIT_METADATA, descriptor.value as object),
  );
}
