import type { Cluster, Redis } from 'ioredis';

/** Closes a connection this package opened: QUIT when ready (waiting for the socket to end), else a disconnect. */
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
