import { Logger } from '@nestjs/common';

/**
 * Records every line logged through Nest's `Logger`, whatever its level, as `level: text` (an Error
 * as `Name: message`), instead of printing it. Undo with `jest.restoreAllMocks()`.
 */
export function recordLogs(): string[] {
  const lines: string[] = [];
  for (const level of ['error', 'warn', 'log', 'debug', 'verbose', 'fatal'] as const) {
    jest.spyOn(Logger.prototype, level).mockImplementation((...args: unknown[]) => {
      const [message] = args;
      lines.push(`${level}: ${message instanceof Error ? `${message.name}: ${message.message}` : String(message)}`);
    });
  }
  return lines;
}
