// Kept for imports written before startRedisServerOnPort moved into redis-server.ts.
export { startRedisServerOnPort } from './redis-server';
