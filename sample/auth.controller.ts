import { Body, Controller, HttpCode, Post, UnauthorizedException } from '@nestjs/common';
import { SlidingLimit } from 'nestjs-sliding-limit';
import { LoginAttemptsService } from './login-attempts.service';

@Controller('auth')
export class AuthController {
  constructor(private readonly attempts: LoginAttemptsService) {}

  /** Login attempts: 5 per minute per client IP (key rl:login:{ip:<ip>}), plus failed logins per account. */
  @Post('login')
  @HttpCode(200)
  @SlidingLimit({ name: 'login', limit: 5, windowMs: 60_000 })
  async login(@Body() body: { username?: string; password?: string }): Promise<{ ok: true }> {
    const username = String(body.username ?? '');
    await this.attempts.assertMayTry(username);
    if (username === 'demo' && body.password === 'demo') {
      await this.attempts.recordSuccess(username);
      return { ok: true };
    }
    const remaining = await this.attempts.recordFailure(username);
    throw new UnauthorizedException(`Wrong username or password; ${remaining} attempt(s) left`);
  }
}
