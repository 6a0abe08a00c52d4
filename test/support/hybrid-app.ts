import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import { ClientProxyFactory, Transport, type ClientProxy, type MicroserviceOptions } from '@nestjs/microservices';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { freePort } from './free-port';

/** Options of a transport, for the server and its client alike. */
export type HybridTransport = {
  transport: Transport.TCP | Transport.REDIS;
  options: { host: string; port: number };
};

/** TCP on a free loopback port. */
export async function tcpTransport(): Promise<HybridTransport> {
  return { transport: Transport.TCP, options: { host: '127.0.0.1', port: await freePort() } };
}

export interface HybridAppOptions extends Pick<ModuleMetadata, 'imports' | 'controllers' | 'providers'> {
  /** The microservice's transport; TCP on a free loopback port by default. */
  transport?: HybridTransport;
  /**
   * Whether the microservice inherits the app's global guards, pipes and filters: the only way a
   * global guard (APP_GUARD, the module's `global`) reaches a hybrid application's message handlers.
   * Default `false`, as in Nest.
   */
  inheritAppConfig?: boolean;
}

export interface HybridApp {
  /** The Express app, listening on a free loopback port. */
  app: INestApplication;
  /** A client of the microservice, connected. */
  client: ClientProxy;
  /** Sends a message and resolves with its reply (rejects with the error the handler's caller gets). */
  send<T = unknown>(pattern: unknown, data: unknown): Promise<T>;
  /** Closes the client, then the app. */
  close(): Promise<void>;
}

/** A hybrid application: HTTP (Express) on a free port plus a microservice, and a client of it. */
export async function startHybridApp(options: HybridAppOptions): Promise<HybridApp> {
  const transport = options.transport ?? (await tcpTransport());
  const moduleRef = await Test.createTestingModule({
    imports: options.imports,
    controllers: options.controllers,
    providers: options.providers,
  }).compile();
  const app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: false });
  let client: ClientProxy | undefined;
  const close = async () => {
    await client?.close();
    await app.close();
  };
  try {
    app.connectMicroservice<MicroserviceOptions>(transport, { inheritAppConfig: options.inheritAppConfig ?? false });
    await app.startAllMicroservices();
    await app.listen(0, '127.0.0.1');
    client = ClientProxyFactory.create(transport);
    await client.connect();
  } catch (error) {
    await close();
    throw error;
  }
  const connected = client;
  return {
    app,
    client: connected,
    send: <T>(pattern: unknown, data: unknown) => firstValueFrom(connected.send<T>(pattern, data)),
    close,
  };
}
