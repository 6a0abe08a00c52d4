// nestjs-sliding-limit/websockets: the guard for @nestjs/websockets gateways, which only it loads.

export { WsSlidingLimitGuard } from './ws-sliding-limit.guard';
export { WsClientExceptionFilter } from './ws-client-exception.filter';
export { rememberUpgradeRequest, type UpgradeRequestLike, type WsRateLimitRequest } from './ws-rate-limit-request';
export type { RateLimitErrorCode, RateLimitErrorPayload } from '../nest/rate-limit-error-payload';
