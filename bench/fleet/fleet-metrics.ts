/**
 * What the fleet benchmark reads off a registrar's `/metrics`: the agent
 * reports it received, by result (`aether_config_agent_reports_total`), and
 * the agents it tracks (`aether_config_reporting_agents`). The parser is
 * pure; {@link scrapeReports} fetches.
 */

/** The reports a registrar counted so far, by result, and the agents it tracks. */
export interface ReportCounts {
  readonly byResult: Readonly<Record<string, number>>;
  readonly total: number;
  readonly reportingAgents: number;
}

const REPORTS = /^aether_config_agent_reports_total\{result="([^"]*)"\} (\S+)$/;
const AGENTS = /^aether_config_reporting_agents (\S+)$/;

/** Reads the report counters out of a Prometheus text exposition (absent ones are 0). */
export function parseReportCounts(text: string): ReportCounts {
  const byResult: Record<string, number> = {};
  let reportingAgents = 0;
  for (const line of text.split("\n")) {
    const reports = REPORTS.exec(line);
    if (reports !== null) byResult[reports[1] as string] = Number(reports[2]);
    const agents = AGENTS.exec(line);
    if (agents !== null) reportingAgents = Number(agents[1]);
  }
  const total = Object.values(byResult).reduce((sum, n) => sum + n, 0);
  return { byResult, total, reportingAgents };
}

/** `after − before`, per result; the agents tracked as of `after`. */
export function reportsBetween(before: ReportCounts, after: ReportCounts): ReportCounts {
  const byResult: Record<string, number> = {};
  for (const [result, n] of Object.entries(after.byResult)) {
    byResult[result] = n - (before.byResult[result] ?? 0);
  }
  return { byResult, total: after.total - before.total, reportingAgents: after.reportingAgents };
}

/** Scrapes the report counters of the registrar at `url`. */
export async function scrapeReports(url: string): Promise<ReportCounts> {
  return parseReportCounts(await (await fetch(`${url}/metrics`)).text());
}
