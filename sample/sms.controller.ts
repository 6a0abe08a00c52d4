import { BadRequestException, Body, Controller, HttpCode, Post } from '@nestjs/common';
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
  send(@Body() body: unknown): { queued: string } {
    const phone = (body as { phone?: unknown } | undefined)?.phone;
    // Without a phone the limits counted the client IP (missing key values fall back to it).
    if (typeof phone !== 'string' || !/^\+?\d{5,15}$/.test(phone)) {
      throw new BadRequestException('Send a JSON body with "phone": 5 to 15 digits');
    }
    return { queued: phone };
  }
}
