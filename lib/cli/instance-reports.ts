import type { Redis } from 'ioredis';
import { INSTANCE_REPORT_MATCH, InstanceReport, parseInstanceReport, prefixOfReportKey } from '../core/instance-report';
import { isUnanswered } from '../redis/error-kind';
import { nodeAddress } from '../redis/redis-nodes';
import { messageOf } from '../redis/reply';

/** A live report, with where it was found. */
export interface FoundReport {
  key: string;
  /** The key prefix of the limiter that wrote it. */
  prefix: string;
  node: string;
  report: InstanceReport;
}

/** The reports found, and the keys that matched the pattern but do not hold a readable report. */
interface ReportScan {
  reports: FoundReport[];
  unreadable: { key: string; node: string }[];
}

const SCAN_COUNT = 1000;

/** Every instance report on the masters (under `prefix`, or every prefix): each is a live instance (it has a TTL). */
export async function readInstanceReports(masters: readonly Redis[], prefix: string | undefined): Promise<ReportScan> {
  const scans = await Promise.all(masters.map((node) => readFromNode(node, prefix)));
  const reports = scans
    .flatMap((scan) => scan.reports)
    .sort((a, b) => a.prefix.localeCompare(b.prefix) || a.report.instanceId.localeCompare(b.report.instanceId));
  return { reports, unreadable: scans.flatMap((scan) => scan.unreadable) };
}

async function readFromNode(node: Redis, prefix: string | undefined): Promise<ReportScan> {
  const match = INSTANCE_REPORT_MATCH(prefix);
  const address = nodeAddress(node);
  const scan: ReportScan = { reports: [], unreadable: [] };
  let cursor = '0';
  do {
    const [next, keys] = await node.scan(cursor, 'MATCH', match, 'COUNT', SCAN_COUNT);
    cursor = String(next);
    if (keys.length === 0) continue;
    const values = await node.mget(...keys).catch((error: unknown) => {
      if (/CROSSSLOT/.test(messageOf(error))) return getOneByOne(node, keys);
      throw error;
    });
    keys.forEach((key, i) => {
      const value = values[i];
      if (value === null || value === undefined) return; // expired between SCAN and GET
      const report = parseInstanceReport(value);
      const reportPrefix = report && prefixOfReportKey(key, report.instanceId);
      if (!report || reportPrefix === undefined) {
        scan.unreadable.push({ key, node: address });
        return;
      }
      scan.reports.push({ key, prefix: reportPrefix, node: address, report });
    });
  } while (cursor !== '0');
  return scan;
}

// After a CROSSSLOT: one GET per key; one that moved or is not a string reads as unreadable.
function getOneByOne(node: Redis, keys: readonly string[]): Promise<(string | null)[]> {
  return Promise.all(
    keys.map((key) =>
      node.get(key).catch((error: unknown) => {
        if (isUnanswered(error)) throw error;
        return '';
      }),
    ),
  );
}
