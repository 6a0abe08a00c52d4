import { SlidingLimitError } from './sliding-limit.error';

/** v2 refused a call whose `now` lags a key's newest entry by more than `maxClockSkewMs`; nothing recorded. */
export class ClockSkewError extends SlidingLimitError {}
