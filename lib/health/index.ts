// The public API of nestjs-sliding-limit/health: the health indicator for @nestjs/terminus, an
// optional peer dependency, so it is an entry point of its own.

export {
  SlidingLimitHealthIndicator,
  type SlidingLimitHealthDegraded,
  type SlidingLimitHealthDetails,
  type SlidingLimitHealthOptions,
  type SlidingLimitHealthResult,
} from './sliding-limit.health';
