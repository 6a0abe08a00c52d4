import { Injectable } from '@nestjs/common';
import { SlidingWindowLimiter, TooManyRequestsException } from 'nestjs-sliding-limit';

/** 3 failed logins per account per 15 minutes; a success clears the count. */
const FAILED_LOGINS = { limit: 3, windowMs: 15 * 60_000 };

/**
 * Counts only failed logins, which a decorator cannot do (it counts every request): peek before
 * checking the password, consume on failure, reset on success.
 */
@Injectable()
export class LoginAttemptsService {
  constructor(private readonly limiter: SlidingWindowLimiter) {}

  async assertMayTry(username: string): Promise<void> {
    const state = await this.limiter.peek(this.key(username), FAILED_LOGINS);
    if (!state.allowed) {
      const retryAfterSeconds = Math.ceil(state.retryAfterMs / 1000);
      throw new TooManyRequestsException(
        { retryAfterSeconds, retryAfterMs: state.retryAfterMs, limits: ['failed-login'] },
        `Too many failed logins for ${username}; retry in ${retryAfterSeconds} s`,
      );
    }
  }

  async recordFailure(username: string): Promise<number> {
    return (await this.limiter.consume(this.key(username), FAILED_LOGINS)).remaining;
  }

  async recordSuccess(username: string): Promise<void> {
    await this.limiter.reset(this.key(username));
  }

  private key(username: string): string {
    return `failed-login:user:${encodeURIComponent(username)}`;
  }
}
