import { BadRequestException, Body, Controller, HttpCode, Post, UnauthorizedException } from '@nestjs/common';
import { SlidingLimit } from 'nestjs-sliding-limit';
import { LoginAttemptsService } from './login-attempts.service';

@Controller('auth')
export class AuthController {
  constructor(private readonly attempts: LoginAttemptsService) {}

  /** Login attempts: 5 per minute per client IP (key rl:login:{ip:<ip>}), plus failed logins per account. */
  @Post('login')
  @HttpCode(200)
  @SlidingLimit({ name: 'login', limit: 5, windowMs: 60_000 })
  async login(@Body() body: unknown): Promise<{ ok: true }> {
    const { username, password } = credentialsOf(body);
    await this.attempts.assertMayTry(username);
    if (username === 'demo' && password === 'demo') {
      await this.attempts.recordSuccess(username);
      return { ok: true };
    }
    const remaining = await this.attempts.recordFailure(username);
    throw new UnauthorizedException(`Wrong username or password; ${remaining} attempt(s) left`);
  }
}

/** The body's username and password; a 400 naming what is wrong otherwise (never a 500). */
function credentialsOf(body: unknown): { username: string; password: string } {
  const { username, password } = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (typeof username !== 'string' || username.length === 0 || typeof password !== 'string') {
    throw new BadRequestException('Send a JSON body with "username" and "password" strings');
  }
  return { username, password };
}
