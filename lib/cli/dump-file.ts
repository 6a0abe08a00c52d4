import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { CliError, ExitCode } from './exit-codes';

export function readDumpFile(path: string): Buffer {
  try {
    return readFileSync(resolve(path));
  } catch (error) {
    throw new CliError(ExitCode.Failed, `cannot read ${resolve(path)}: ${(error as Error).message}`, { cause: error });
  }
}
