import { Inject, Injectable, Logger, type OnModuleInit, type Type } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, ModuleRef } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import { RATE_LIMIT_OPTIONS } from './rate-limit.constants';
import type { RateLimitKey } from './rate-limit-key';
import type { ResolvedRateLimitOptions } from './rate-limit.options';
import type { CompiledKey } from './key-template';
import { describeBigLogs, describeShortWindows, describeVersionProblems, functionNeedsOf } from './plan-checks';
import type { FunctionNeeds } from '../limiter/sliding-window-limiter.interfaces';
import {
  buildHandlerPlan,
  compileFunctionPolicy,
  hasRateLimitMetadata,
  type CompiledPolicy,
  type HandlerPlan,
  type RouteHandler,
} from './limit-plan';
import { isPolicyClass, type RateLimitPolicy, type RateLimitPolicyRef } from './rate-limit-policy';

/**
 * The per-handler plans of the guard, built for every controller and provider carrying `@SlidingLimit`
 * when the module initialises: bad decorator arguments fail `app.init()`, and a request only looks up.
 */
@Injectable()
export class SlidingLimitPlans implements OnModuleInit {
  private readonly logger = new Logger('SlidingLimitPlans');
  private readonly plans = new WeakMap<Type, Map<RouteHandler, HandlerPlan>>();
  private readonly compiledKeys = new Map<RateLimitKey, CompiledKey>();
  /** Every plan built, in order: what the routes need of the limiter's functions is read from them. */
  private readonly built: HandlerPlan[] = [];

  /** @internal The module's options, as validated. */
  readonly options: ResolvedRateLimitOptions;

  /** @internal */
  constructor(
    @Inject(RATE_LIMIT_OPTIONS) options: ResolvedRateLimitOptions,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly moduleRef: ModuleRef,
  ) {
    this.options = options;
  }

  /** Policies by class or function, each compiled once: an injectable is looked up in Nest's container. */
  private readonly policies = new Map<RateLimitPolicyRef, CompiledPolicy | string>();
  private readonly policyOf = (ref: RateLimitPolicyRef): CompiledPolicy | string => {
    let policy = this.policies.get(ref);
    if (policy === undefined) this.policies.set(ref, (policy = this.compilePolicy(ref)));
    return policy;
  };

  private compilePolicy(ref: RateLimitPolicyRef): CompiledPolicy | string {
    if (!isPolicyClass(ref)) return compileFunctionPolicy(ref);
    let instance: RateLimitPolicy | undefined;
    try {
      instance = this.moduleRef.get(ref, { strict: false });
    } catch (error) {
      const scoped = /scoped|resolve\(\)/i.test((error as Error)?.message ?? '');
      return scoped
        ? `${ref.name} is request- or transient-scoped: a policy is resolved for every request by one ` +
            'instance; make it a singleton (the default scope) and read the request from resolve(request)'
        : `${ref.name} is not a provider: add it to the providers of a module (e.g. the module of the controller)`;
    }
    if (!instance || typeof instance.resolve !== 'function') return `${ref.name} has no resolve method`;
    const resolve = instance.resolve.bind(instance);
    return { label: ref.name, resolve };
  }

  onModuleInit(): void {
    const problems = new Set<string>();
    const classes = classesToPlan(this.discovery, this.scanner);
    const plans: HandlerPlan[] = [];
    for (const type of classes) {
      for (const methodName of this.scanner.getAllMethodNames(type.prototype as object)) {
        const handler = (type.prototype as Record<string, unknown>)[methodName];
        if (typeof handler !== 'function') continue;
        const result = buildHandlerPlan(type, handler, this.options, this.compiledKeys, this.policyOf);
        if (result.plan) {
          this.store(type, handler, result.plan);
          plans.push(result.plan);
        } else result.problems.forEach((p) => problems.add(p));
      }
    }
    describeVersionProblems(plans, this.options.limiter).forEach((p) => problems.add(p));
    if (problems.size > 0) throw new RateLimitConfigError([...problems]);
    for (const line of [...describeShortWindows(plans), ...describeBigLogs(plans)]) this.logger.warn(line);
  }

  /** The plan of a handler, built on first use for one not discovered at start-up. @internal */
  get(controller: Type, handler: RouteHandler): HandlerPlan {
    const cached = this.plans.get(controller)?.get(handler);
    if (cached) return cached;
    const result = buildHandlerPlan(controller, handler, this.options, this.compiledKeys, this.policyOf);
    if (!result.plan) throw new RateLimitConfigError(result.problems);
    this.store(controller, handler, result.plan);
    return result.plan;
  }

  /** @internal Every plan built so far (each discovered handler's, at bootstrap), in order. */
  all(): readonly HandlerPlan[] {
    return this.built;
  }

  /** @internal What the routes need of the limiter's functions (a cost, precisionMs), by route. */
  functionNeeds(): FunctionNeeds {
    return functionNeedsOf(this.built);
  }

  private store(controller: Type, handler: RouteHandler, plan: HandlerPlan): void {
    this.built.push(plan);
    let byHandler = this.plans.get(controller);
    if (!byHandler) this.plans.set(controller, (byHandler = new Map<RouteHandler, HandlerPlan>()));
    byHandler.set(handler, plan);
  }
}

/** The classes whose handlers get a plan: every controller, and providers carrying rate-limit metadata. */
export function classesToPlan(discovery: DiscoveryService, scanner: MetadataScanner): Set<Type> {
  const classes = new Set<Type>();
  for (const wrapper of discovery.getControllers()) {
    const type = classOf(wrapper);
    if (type) classes.add(type);
  }
  for (const wrapper of discovery.getProviders()) {
    const type = classOf(wrapper);
    if (type && carriesMetadata(type, scanner)) classes.add(type);
  }
  return classes;
}

function carriesMetadata(type: Type, scanner: MetadataScanner): boolean {
  if (hasRateLimitMetadata(type)) return true;
  return scanner.getAllMethodNames(type.prototype as object).some((name) => {
    const method = (type.prototype as Record<string, unknown>)[name];
    return typeof method === 'function' && hasRateLimitMetadata(method);
  });
}

function classOf(wrapper: InstanceWrapper): Type | undefined {
  const instance = wrapper.instance as object | undefined;
  if (
    instance &&
    typeof instance === 'object' &&
    typeof instance.constructor === 'function' &&
    instance.constructor !== Object
  ) {
    return instance.constructor as Type;
  }
  // Request-scoped classes have no static instance; their metatype is the class (for factories it is not).
  return !wrapper.inject && typeof wrapper.metatype === 'function' ? (wrapper.metatype as Type) : undefined;
}
