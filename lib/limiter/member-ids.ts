import { randomBytes } from 'node:crypto';

/** Sorted-set members unique per request: a random per-instance prefix and a base-36 counter, kept short. */
export class MemberIdSource {
  private readonly prefix = randomBytes(6).toString('base64url');
  private counter = 0;

  next(): string {
    return this.prefix + (this.counter++).toString(36);
  }
}
