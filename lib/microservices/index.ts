// The public API of nestjs-sliding-limit/microservices: the guard for @nestjs/microservices handlers.
// Loads @nestjs/microservices; nothing here is part of the main entry point.

export { RpcSlidingLimitGuard } from './rpc-sliding-limit.guard';
export type { RpcRateLimitRequest } from './rpc-rate-limit-request';
export type { RateLimitErrorCode, RateLimitErrorPayload } from '../nest/rate-limit-error-payload';
