import type { Cluster, Redis } from 'ioredis';

/** An ioredis connection: a standalone `Redis` client or a `Cluster`. */
export type RedisConnection = Redis | Cluster;
