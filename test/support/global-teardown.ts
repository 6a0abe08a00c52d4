export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __NSL_REDIS__?: { stop(): Promise<void> } }).__NSL_REDIS__?.stop();
}
