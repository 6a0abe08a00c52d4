import { randomBytes } from 'node:crypto';

/**
 * Makes sorted-set members that are unique per request: a random per-instance prefix
 * (48 bits, 8 characters) and a base-36 counter. Same-millisecond requests from any number of
 * processes never collide, and members stay around 10 characters, so a key stays in Redis'
 * compact listpack encoding (members under 64 bytes) and costs far less memory than a
 * timestamp plus a UUID, without a random draw per request.
 */
export class MemberIdSource {
  private readonly prefix = randomBytes(6).toString('base64url');
  private counter = 0;

  next(): string {
    return this.prefix + (this.counter++).toString(36);
  }
}
