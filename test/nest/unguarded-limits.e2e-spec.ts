import { Controller, Get, Logger, Module, UseGuards, type INestApplication, type Type } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import request from 'supertest';
import {
  RateLimitConfigError,
  RateLimitModule,
  SkipRateLimit,
  SlidingLimit,
  SlidingLimitGuard,
  SlidingWindowLimiter,
  SlidingLimitPlans,
} from 'nestjs-sliding-limit';
import { GqlSlidingLimitGuard } from 'nestjs-sliding-limit/graphql';
import { RpcSlidingLimitGuard } from 'nestjs-sliding-limit/microservices';
import { WsSlidingLimitGuard } from 'nestjs-sliding-limit/websockets';
import { rejectionOf } from '../support/rejection';
import { RateLimitTestingModule } from 'nestjs-sliding-limit/testing';

@Controller('open')
class OpenController {
  @Get()
  @SlidingLimit({ name: 'open', limit: 1, windowMs: 60_000 })
  open(): string {
    return 'ok';
  }

  /** Not a limit of its own: the class has none, so nothing to report here. */
  helper(): string {
    return 'helper';
  }
}

@Controller('class-limited')
@SlidingLimit({ name: 'class-limited', limit: 1, windowMs: 60_000 })
class ClassLimitedController {
  @Get()
  get(): string {
    return 'ok';
  }
}

@Controller('skipped')
@SkipRateLimit()
@SlidingLimit({ name: 'skipped', limit: 1, windowMs: 60_000 })
class SkippedController {
  @Get()
  get(): string {
    return 'ok';
  }
}

@Controller('guarded')
@UseGuards(SlidingLimitGuard)
class GuardedController {
  @Get()
  @SlidingLimit({ name: 'guarded', limit: 1, windowMs: 60_000 })
  get(): string {
    return 'ok';
  }
}

@Controller('method-guarded')
class MethodGuardedController {
  @Get()
  @UseGuards(RpcSlidingLimitGuard)
  @SlidingLimit({ name: 'method-guarded', limit: 1, windowMs: 60_000 })
  get(): string {
    return 'ok';
  }
}

@WebSocketGateway()
class UnguardedGateway {
  @SubscribeMessage('say')
  @SlidingLimit({ name: 'say', limit: 1, windowMs: 60_000 })
  say(@MessageBody() data: unknown): unknown {
    return data;
  }
}

@WebSocketGateway()
@UseGuards(WsSlidingLimitGuard)
class GuardedGateway {
  @SubscribeMessage('say')
  @SlidingLimit({ name: 'say', limit: 1, windowMs: 60_000 })
  say(@MessageBody() data: unknown): unknown {
    return data;
  }
}

/** What the application logged as warnings, one string per line. */
function warnings(warn: jest.SpyInstance): string[] {
  return warn.mock.calls.map(([line]) => String(line));
}

describe('a guard without RateLimitModule', () => {
  it.each<[string, { controllers?: Type[]; providers?: Type[] }]>([
    ['SlidingLimitGuard', { controllers: [GuardedController] }],
    ['WsSlidingLimitGuard', { providers: [GuardedGateway] }],
  ])('%s in @UseGuards fails start-up naming RateLimitModule.forRoot', async (name, metadata) => {
    const error = await rejectionOf(Test.createTestingModule(metadata).compile());
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect((error as Error).message).toContain(
      `${name} needs RateLimitModule: import RateLimitModule.forRoot(…) or forRootAsync(…)`,
    );
  });

  it('GqlSlidingLimitGuard as APP_GUARD fails start-up naming RateLimitModule.forRoot', async () => {
    const error = await rejectionOf(
      Test.createTestingModule({
        controllers: [OpenController],
        providers: [{ provide: APP_GUARD, useClass: GqlSlidingLimitGuard }],
      }).compile(),
    );
    expect((error as Error).message).toContain('GqlSlidingLimitGuard needs RateLimitModule');
  });

  it('fails in a module that does not import a RateLimitModule registered with isGlobal: false', async () => {
    @Module({ controllers: [GuardedController] })
    class FeatureModule {}
    const error = await rejectionOf(
      Test.createTestingModule({
        imports: [RateLimitModule.forRoot({ store: 'memory', isGlobal: false }), FeatureModule],
      }).compile(),
    );
    expect((error as Error).message).toContain('SlidingLimitGuard needs RateLimitModule');
    expect((error as Error).message).toContain('isGlobal: false');
  });
});

describe('@SlidingLimit in an application without RateLimitModule', () => {
  let app: INestApplication | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
    jest.restoreAllMocks();
  });

  it('warns at start-up, naming each limited class and the module to import', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const moduleRef = await Test.createTestingModule({
      controllers: [OpenController, ClassLimitedController],
      providers: [UnguardedGateway],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const lines = warnings(warn).filter((line) => line.includes('RateLimitModule'));
    expect(lines).toEqual([
      'OpenController, ClassLimitedController, UnguardedGateway carry @SlidingLimit, but the application does not ' +
        'import RateLimitModule, so nothing is limited: import RateLimitModule.forRoot(…) or forRootAsync(…) in ' +
        'the root module (see docs/nest.md, "Registering the module")',
    ]);
    // Nothing else changes: the route answers as it would without the decorator.
    await request(app.getHttpServer()).get('/open').expect(200);
    await request(app.getHttpServer()).get('/open').expect(200);
  });

  it('stays quiet when the module is imported', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const moduleRef = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ store: 'memory' })],
      controllers: [OpenController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    expect(warnings(warn).filter((line) => line.includes('@SlidingLimit'))).toEqual([]);
    await request(app.getHttpServer()).get('/open').expect(200);
    await request(app.getHttpServer()).get('/open').expect(429);
  });
});

describe('limited handlers no guard runs for', () => {
  let app: INestApplication | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
    jest.restoreAllMocks();
  });

  const start = async (
    global: boolean,
    controllers: Type[],
    providers: Parameters<typeof Test.createTestingModule>[0]['providers'] = [],
  ) => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const moduleRef = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ store: 'memory', global })],
      controllers,
      providers,
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    return warnings(warn).filter((line) => line.includes('no SlidingLimitGuard runs'));
  };

  it('with global: false, are listed at start-up (handlers, and classes with class-level limits)', async () => {
    const lines = await start(false, [
      OpenController,
      ClassLimitedController,
      SkippedController,
      GuardedController,
      MethodGuardedController,
    ]);
    expect(lines).toEqual([
      'OpenController.open, ClassLimitedController (class-level) have @SlidingLimit, but no SlidingLimitGuard runs ' +
        'for them, so they are not limited: with global: false, add @UseGuards(SlidingLimitGuard) to them, or ' +
        'register a guard as APP_GUARD (see docs/nest.md, "Module options")',
    ]);
    // The listed route is indeed not limited; the guarded one is.
    for (let i = 0; i < 3; i++) await request(app?.getHttpServer()).get('/open').expect(200);
    await request(app?.getHttpServer()).get('/guarded').expect(200);
    await request(app?.getHttpServer()).get('/guarded').expect(429);
  });

  it('with global: false and a guard of the package as APP_GUARD, are none', async () => {
    expect(await start(false, [OpenController], [{ provide: APP_GUARD, useClass: RpcSlidingLimitGuard }])).toEqual([]);
  });

  it('with global: false and a guard given to app.useGlobalGuards, are none', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const moduleRef = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ store: 'memory', global: false })],
      controllers: [OpenController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    app.useGlobalGuards(new SlidingLimitGuard(app.get(SlidingWindowLimiter), app.get(SlidingLimitPlans)));
    await app.init();
    expect(warnings(warn).filter((line) => line.includes('no SlidingLimitGuard runs'))).toEqual([]);
    await request(app.getHttpServer()).get('/open').expect(200);
    await request(app.getHttpServer()).get('/open').expect(429);
  });

  it('with global: true, are the gateways without a guard of their own', async () => {
    expect(await start(true, [OpenController, ClassLimitedController], [UnguardedGateway, GuardedGateway])).toEqual([
      'UnguardedGateway.say has @SlidingLimit, but no SlidingLimitGuard runs for it, so it is not limited: Nest ' +
        'runs no global guard for WebSocket gateways; add @UseGuards(WsSlidingLimitGuard) to the gateway (see ' +
        'docs/websockets-and-microservices.md)',
    ]);
  });
});

describe('RateLimitTestingModule.override on a module without RateLimitModule', () => {
  it('fails compile(), since nothing would be limited', async () => {
    @Module({ controllers: [OpenController] })
    class AppModule {}
    const { builder } = RateLimitTestingModule.override(Test.createTestingModule({ imports: [AppModule] }));
    const error = await rejectionOf(builder.compile());
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect((error as Error).message).toContain(
      'RateLimitTestingModule.override found no RateLimitModule in the tested module',
    );
  });
});
