// nestjs-sliding-limit/health: the indicator for @nestjs/terminus, an optional peer, hence an entry point of its own.

export {
  SlidingLimitHealthIndicator,
  type SlidingLimitHealthDegraded,
  type SlidingLimitHealthDetails,
  type SlidingLimitHealthOptions,
  type SlidingLimitHealthResult,
} from './sliding-limit.health';
