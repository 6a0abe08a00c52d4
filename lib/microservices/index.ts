// nestjs-sliding-limit/microservices: the guard for @nestjs/microservices handlers, which only it loads.

export { RpcSlidingLimitGuard } from './rpc-sliding-limit.guard';
export type { RpcRateLimitRequest } from './rpc-rate-limit-request';
export type { RateLimitErrorCode, RateLimitErrorPayload } from '../nest/rate-limit-error-payload';
