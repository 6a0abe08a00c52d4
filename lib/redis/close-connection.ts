import type { Cluster, Redis } from 'ioredis';

/**
 * Closes a connection this package opened: QUIT when it is ready (waiting for the socket to end,
 * since QUIT resolves on its reply), a hard disconnect otherwise — QUIT would first wait for a
 * connection that may never come — or when QUIT fails.
 */
export async function closeConnection(connection: Redis | Cluster): Promise<void> {
  if (connection.status === 'end') return;
  if (connection.status !== 'ready') {
    connection.disconnect();
    return;
  }
  const ended = new Promise<void>((resolve) => connection.once('end', () => resolve()));
  try {
    await connection.quit();
  } catch {
    connection.disconnect();
  }
  await ended;
}
