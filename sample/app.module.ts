import { Module, type MiddlewareConsumer, type NestModule } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { RateLimitModule } from 'nestjs-sliding-limit';
import { AuthController } from './auth.controller';
import { FakeAuthMiddleware } from './fake-auth.middleware';
import { HealthController } from './health.controller';
import { LoginAttemptsService } from './login-attempts.service';
import { OrdersController } from './orders.controller';
import { SearchController } from './search.controller';
import { SmsController } from './sms.controller';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

@Module({
  imports: [
    ConfigModule.forRoot({ isGlobal: true }),
    RateLimitModule.forRootAsync({
      inject: [ConfigService],
      useFactory: (config: ConfigService) => ({
        redis: config.get<string>('REDIS_URL', DEFAULT_REDIS_URL),
        // sliding_allow_v1 or sliding_allow_v2 (the default): switch versions without a code change.
        functionName: config.get<string>('RATE_LIMIT_FUNCTION'),
        headers: 'both',
      }),
    }),
  ],
  controllers: [AuthController, SmsController, OrdersController, SearchController, HealthController],
  providers: [LoginAttemptsService],
})
export class AppModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(FakeAuthMiddleware).forRoutes(OrdersController);
  }
}
