// A minimal Nest app using the packed nestjs-sliding-limit, run by nest-majors.spec.ts in a folder
// where another NestJS major and ioredis major are installed. Decorators are applied as functions:
// no TypeScript build step is needed here.
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RateLimitModule, SlidingLimit, SlidingWindowLimiter } from 'nestjs-sliding-limit';

class LimitedController {
  hello() {
    return 'hello';
  }
}
const hello = Object.getOwnPropertyDescriptor(LimitedController.prototype, 'hello');
Controller('limited')(LimitedController);
Get()(LimitedController.prototype, 'hello', hello);
SlidingLimit({ name: 'compat', limit: 2, windowMs: 60_000 })(LimitedController.prototype, 'hello', hello);

class AppModule {}
Module({
  imports: [
    RateLimitModule.forRoot({
      redis: process.env.REDIS_URL,
      keyPrefix: process.env.KEY_PREFIX,
      // The suite's test settings (test/support/test-limiter.ts), and a clock that stands still: on a
      // loaded host a cold process's first calls can outwait the default 250 ms, and a second between
      // the first request and the refusal would make its Retry-After 59.
      timeoutMs: 5000,
      report: false,
      clock: () => 1_700_000_000_000,
    }),
  ],
  controllers: [LimitedController],
})(AppModule);

const app = await NestFactory.create(AppModule, { logger: false });
await app.listen(0, '127.0.0.1');
const url = await app.getUrl();
const answers = [];
for (let i = 0; i < 3; i++) {
  const response = await fetch(`${url}/limited`);
  answers.push({
    status: response.status,
    remaining: response.headers.get('x-ratelimit-remaining'),
    retryAfter: response.headers.get('retry-after'),
  });
}
const limiter = app.get(SlidingWindowLimiter);
await app.close();

// The same controller in an application that forgot RateLimitModule: start-up must say so.
class ForgetfulModule {}
Module({ controllers: [LimitedController] })(ForgetfulModule);
const warnings = [];
const logger = { log() {}, error() {}, debug() {}, verbose() {}, warn: (line) => warnings.push(String(line)) };
const forgetful = await NestFactory.create(ForgetfulModule, { logger });
await forgetful.init();
await forgetful.close();

console.log(JSON.stringify({ answers, functionName: limiter.functionName, mode: limiter.mode, warnings }));
