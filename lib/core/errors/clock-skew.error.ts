import { SlidingLimitError } from './sliding-limit.error';

/**
 * v2 refused a call whose `now` lags behind the newest entry of a key by more than
 * `maxClockSkewMs`: some gateway's clock is wrong. Nothing was recorded.
 */
export class ClockSkewError extends SlidingLimitError {}
