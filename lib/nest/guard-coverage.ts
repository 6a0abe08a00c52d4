import { Inject, Injectable, Logger, type CanActivate, type OnApplicationBootstrap, type Type } from '@nestjs/common';
import { GUARDS_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner, ModuleRef } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import { RATE_LIMIT_OPTIONS, SKIP_RATE_LIMIT_METADATA, SLIDING_LIMIT_METADATA } from './rate-limit.constants';
import type { ResolvedRateLimitOptions } from './rate-limit.options';
import { classesToPlan, SlidingLimitPlans } from './rate-limit-plans';
import { SlidingLimitGuard } from './sliding-limit.guard';

/** Where `@WebSocketGateway` marks a gateway (`@nestjs/websockets`, which this layer does not load). */
const GATEWAY_METADATA = 'websockets:is_gateway';

/** The global guards of the application, as far as Nest lets them be read. */
interface GlobalGuards {
  getGlobalGuards(): CanActivate[];
  getGlobalRequestGuards(): InstanceWrapper<CanActivate>[];
}

/**
 * Says at start-up which `@SlidingLimit` handlers no guard of the package runs for: with `global:
 * false`, those without `@UseGuards`; always, gateway handlers without a guard of their own (Nest runs
 * no global guard for gateways). Limits from `defaultLimit` alone are not listed.
 */
@Injectable()
export class GuardCoverageCheck implements OnApplicationBootstrap {
  private readonly logger = new Logger('RateLimitModule');

  constructor(
    @Inject(RATE_LIMIT_OPTIONS) private readonly options: ResolvedRateLimitOptions,
    private readonly plans: SlidingLimitPlans,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly moduleRef: ModuleRef,
  ) {}

  onApplicationBootstrap(): void {
    const globalGuard = this.options.global || this.hasGlobalGuard();
    const handlers: string[] = [];
    const gatewayHandlers: string[] = [];
    for (const type of classesToPlan(this.discovery, this.scanner)) {
      const gateway = Reflect.getMetadata(GATEWAY_METADATA, type) === true;
      if ((globalGuard && !gateway) || isGuarded(type)) continue;
      (gateway ? gatewayHandlers : handlers).push(...this.unguardedLimits(type));
    }
    if (handlers.length > 0) {
      this.logger.warn(
        `${notLimited(handlers)}: with global: false, add @UseGuards(SlidingLimitGuard) to ${them(handlers)}, or ` +
          'register a guard as APP_GUARD (see docs/nest.md, "Module options")',
      );
    }
    if (gatewayHandlers.length > 0) {
      this.logger.warn(
        `${notLimited(gatewayHandlers)}: Nest runs no global guard for WebSocket gateways; add ` +
          `@UseGuards(WsSlidingLimitGuard) to the gateway${gatewayHandlers.length > 1 ? 's' : ''} ` +
          '(see docs/websockets-and-microservices.md)',
      );
    }
  }

  /**
   * The limits of a class without a guard of its own: each method with a `@SlidingLimit` and no
   * guard, and the class itself for its class-level limits when none of its methods has a guard.
   */
  private unguardedLimits(type: Type): string[] {
    const prototype = type.prototype as Record<string, unknown>;
    const methods = this.scanner
      .getAllMethodNames(prototype)
      .map((name) => [name, prototype[name]] as const)
      .filter((entry): entry is readonly [string, Type] => typeof entry[1] === 'function');
    const found: string[] = [];
    for (const [name, method] of methods) {
      if (hasOwnLimits(method) && !isGuarded(method) && this.plans.get(type, method).limits.length > 0) {
        found.push(`${type.name}.${name}`);
      }
    }
    const skipped = Reflect.getMetadata(SKIP_RATE_LIMIT_METADATA, type) === true;
    if (hasOwnLimits(type) && !skipped && !methods.some(([, method]) => isGuarded(method))) {
      found.push(`${type.name} (class-level)`);
    }
    return found;
  }

  /** Whether a global guard is one of the package's; yes when Nest's application config cannot be read. */
  private hasGlobalGuard(): boolean {
    const config = (this.moduleRef as unknown as { container?: { applicationConfig?: Partial<GlobalGuards> } })
      .container?.applicationConfig;
    if (typeof config?.getGlobalGuards !== 'function' || typeof config.getGlobalRequestGuards !== 'function') {
      return true;
    }
    return (
      config.getGlobalGuards().some(isPackageGuard) ||
      config.getGlobalRequestGuards().some((wrapper) => isPackageGuard(wrapper.metatype))
    );
  }
}

function hasOwnLimits(target: object): boolean {
  return Reflect.hasOwnMetadata(SLIDING_LIMIT_METADATA, target);
}

/** Whether `@UseGuards` on a class or a method names a guard of the package (or a subclass). */
function isGuarded(target: object): boolean {
  const guards = Reflect.getMetadata(GUARDS_METADATA, target) as unknown[] | undefined;
  return guards?.some(isPackageGuard) ?? false;
}

/** `SlidingLimitGuard`, a subclass of it, or an instance of either. */
function isPackageGuard(guard: unknown): boolean {
  if (typeof guard === 'function') {
    return guard === SlidingLimitGuard || (guard as Type).prototype instanceof SlidingLimitGuard;
  }
  return guard instanceof SlidingLimitGuard;
}

function notLimited(names: readonly string[]): string {
  return names.length > 1
    ? `${names.join(', ')} have @SlidingLimit, but no SlidingLimitGuard runs for them, so they are not limited`
    : `${names[0]} has @SlidingLimit, but no SlidingLimitGuard runs for it, so it is not limited`;
}

function them(names: readonly string[]): string {
  return names.length > 1 ? 'them' : 'it';
}
