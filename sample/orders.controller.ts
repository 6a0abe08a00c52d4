import { Controller, Post, Req } from '@nestjs/common';
import { SlidingLimit } from 'nestjs-sliding-limit';

@Controller('orders')
export class OrdersController {
  /** Orders per user: 3 per minute (key rl:order:{user:<id>}); anonymous callers count per IP. */
  @Post()
  @SlidingLimit({ name: 'order', limit: 3, windowMs: 60_000, key: 'user' })
  create(@Req() req: { user?: { id: string } }): { orderedBy: string } {
    return { orderedBy: req.user?.id ?? 'anonymous' };
  }
}
