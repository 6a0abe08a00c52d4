import { Controller, Get } from '@nestjs/common';
import { SkipRateLimit } from 'nestjs-sliding-limit';

@Controller('health')
@SkipRateLimit()
export class HealthController {
  /** Never limited: load balancers poll it. */
  @Get()
  health(): { status: 'ok' } {
    return { status: 'ok' };
  }
}
