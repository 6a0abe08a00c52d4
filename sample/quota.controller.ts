import { Controller, Get, Query } from '@nestjs/common';
import { SlidingLimit } from 'nestjs-sliding-limit';

const HOUR_MS = 60 * 60 * 1000;

/**
 * An API quota: 10,000 units per hour per API key (the `x-api-key` header), where a search costs 1
 * and an export 10. A log of 10,000 entries would take about 1 MB per key in Redis; `precisionMs`
 * keeps one count per minute instead (under 2 KB per key), and still never admits more than 10,000
 * in any hour. Needs sliding_allow_v2.
 */
@Controller('quota')
@SlidingLimit({ name: 'api-quota', limit: 10_000, windowMs: HOUR_MS, precisionMs: 60_000, key: 'header:x-api-key' })
export class QuotaController {
  @Get('search')
  search(@Query('q') q = ''): { q: string; results: string[] } {
    return { q, results: [] };
  }

  @Get('export')
  @SlidingLimit({
    name: 'api-quota',
    limit: 10_000,
    windowMs: HOUR_MS,
    precisionMs: 60_000,
    key: 'header:x-api-key',
    cost: 10,
  })
  export(): { rows: number } {
    return { rows: 0 };
  }
}
