import { Injectable, type NestMiddleware } from '@nestjs/common';

/**
 * Stand-in authentication: the `x-user-id` header becomes `req.user.id`. Real apps set `req.user`
 * the same way (passport, a JWT middleware) — before guards run, which a per-user limit needs.
 */
@Injectable()
export class FakeAuthMiddleware implements NestMiddleware {
  use(req: { headers: Record<string, unknown>; user?: { id: string } }, _res: unknown, next: () => void): void {
    const id = req.headers['x-user-id'];
    if (typeof id === 'string' && id.length > 0) req.user = { id };
    next();
  }
}
