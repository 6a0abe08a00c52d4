import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { SlidingLimit } from 'nestjs-sliding-limit';

@Controller('sms')
export class SmsController {
  /**
   * SMS codes per phone number: 1 per minute and 10 per day, checked together — a request the
   * minute limit rejects does not use up the day's quota.
   */
  @Post('code')
  @HttpCode(202)
  @SlidingLimit({ name: 'sms-minute', limit: 1, windowMs: 60_000, key: 'body:phone' })
  @SlidingLimit({ name: 'sms-day', limit: 10, windowMs: 24 * 60 * 60_000, key: 'body:phone' })
  send(@Body() body: { phone?: string }): { queued: string | undefined } {
    return { queued: body.phone };
  }
}
