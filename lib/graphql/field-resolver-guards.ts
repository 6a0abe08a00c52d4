import type { Type } from '@nestjs/common';
import { ModulesContainer, type ModuleRef } from '@nestjs/core';
import { GRAPHQL_MODULE_OPTIONS, RESOLVER_PROPERTY_METADATA } from '@nestjs/graphql';
import type { SlidingLimitPlans } from 'nestjs-sliding-limit';

/** The GraphQL module options already checked, so that several guard instances say it once. */
const checked = new WeakSet<object>();

/** `Resolver.method` of every limited `@ResolveField` no guard runs for (`fieldResolverEnhancers` lacks `'guards'`). */
export function unguardedLimitedFields(moduleRef: ModuleRef, plans: SlidingLimitPlans): string[] {
  const options = optional<{ fieldResolverEnhancers?: readonly string[] }>(moduleRef, GRAPHQL_MODULE_OPTIONS);
  const modules = optional<ModulesContainer>(moduleRef, ModulesContainer);
  if (!options || !modules || checked.has(options)) return [];
  checked.add(options);
  if (options.fieldResolverEnhancers?.includes('guards')) return [];
  const found = new Set<string>();
  const seen = new Set<Type>();
  for (const module of modules.values()) {
    for (const wrapper of module.providers.values()) {
      const instance = wrapper.instance as object | null | undefined;
      if (!instance || typeof instance !== 'object') continue;
      const type = instance.constructor as Type;
      if (seen.has(type)) continue;
      seen.add(type);
      // Descriptors, not property reads: a prototype's getters (Nest's own providers have some) must not run.
      for (const descriptor of Object.values(Object.getOwnPropertyDescriptors(type.prototype))) {
        const method: unknown = descriptor.value;
        if (typeof method !== 'function' || Reflect.getMetadata(RESOLVER_PROPERTY_METADATA, method) !== true) continue;
        const plan = plans.get(type, method);
        if (plan.limits.length > 0) found.add(plan.route);
      }
    }
  }
  return [...found];
}

function optional<T>(moduleRef: ModuleRef, token: string | Type): T | undefined {
  try {
    return moduleRef.get<T>(token, { strict: false });
  } catch {
    return undefined;
  }
}
