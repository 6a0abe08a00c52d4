import { Controller, Get, Query } from '@nestjs/common';
import { SlidingLimit } from 'nestjs-sliding-limit';

@Controller('search')
export class SearchController {
  /** One bucket for everyone (key rl:search:{global}): protects a costly backend, 10 per second in total. */
  @Get()
  @SlidingLimit({ name: 'search', limit: 10, windowMs: 1000, key: 'global' })
  search(@Query('q') q = ''): { q: string; results: string[] } {
    return { q, results: [] };
  }
}
