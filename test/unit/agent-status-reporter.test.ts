/**
 * The status reporter's shell (`report/status-reporter.ts`) over a fake
 * client: changes during a call are sent once after it, with an increasing
 * sequence under one incarnation; a (re)connection sends the report again
 * at once; a failure is retried after the backoff and
 * logged once per run of failures; a registrar answering UNIMPLEMENTED is
 * logged once at info and not asked again soon, however much changes.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import type { AppliedReport } from "../../clients/agent/report/applied-report.js";
import {
  createStatusReporter,
  type ReporterClient,
  type StatusReporter,
  type StatusReportResult,
} from "../../clients/agent/report/status-reporter.js";
import type { ReportAppliedConfigRequest } from "../../gen/aether/registry/v1/fleet_pb.js";
import { captureLogger } from "../support/capture-logger.js";
import { waitFor } from "../support/wait.js";

const reporters: StatusReporter[] = [];
afterEach(async () => {
  await Promise.all(reporters.splice(0).map((r) => r.stop()));
});

/** A fake client answering each call with `answer(n)` (n from 1), recording the requests. */
function fakeClient(answer: (n: number) => Promise<void>) {
  const requests: ReportAppliedConfigRequest[] = [];
  const client = {
    async reportAppliedConfig(request: ReportAppliedConfigRequest) {
      requests.push(request);
      await answer(requests.length);
      return { reportInterval: { seconds: 3600n, nanos: 0 } };
    },
  } as unknown as ReporterClient;
  return { client, requests };
}

function reporter(client: ReporterClient, content: () => AppliedReport) {
  const log = captureLogger();
  const results: StatusReportResult[] = [];
  const created = createStatusReporter({
    client,
    agentId: "node-1",
    incarnation: "inc-1",
    content,
    logger: log.logger,
    onResult: (result) => results.push(result),
    backoff: { initialMs: 20, maxMs: 40 },
    random: () => 0.5,
  });
  reporters.push(created);
  return { reporter: created, log, results };
}

const report = (revision: number): AppliedReport => ({
  ready: true,
  revision: BigInt(revision),
  services: [],
});

describe("status reporter", () => {
  it("sends changes made during a call once after it, with an increasing sequence", async () => {
    let release: () => void = () => {};
    const first = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { client, requests } = fakeClient((n) => (n === 1 ? first : Promise.resolve()));
    let revision = 1;
    const { reporter: r, results } = reporter(client, () => report(revision));
    r.start();
    await waitFor(() => requests.length === 1);
    for (revision = 2; revision <= 5; revision++) r.changed();
    revision = 5;
    release();
    await waitFor(() => results.length === 2);
    r.changed();
    await new Promise((resolve) => setImmediate(resolve));
    expect(requests.map((q) => [q.sequence, q.revision, q.incarnation, q.agentId])).toEqual([
      [1n, 1n, "inc-1", "node-1"],
      [2n, 5n, "inc-1", "node-1"],
    ]);
    expect(results).toEqual(["ok", "ok"]);
  });

  it("sends the unchanged report again at once when the agent (re)connects to a registrar", async () => {
    const { client, requests } = fakeClient(() => Promise.resolve());
    const { reporter: r, results } = reporter(client, () => report(1));
    r.start();
    await waitFor(() => results.length === 1);
    r.changed();
    await new Promise((resolve) => setImmediate(resolve));
    expect(requests).toHaveLength(1);
    r.connected();
    await waitFor(() => results.length === 2);
    expect(requests.map((q) => [q.sequence, q.revision])).toEqual([
      [1n, 1n],
      [2n, 1n],
    ]);
  });

  it("retries a failure after the backoff, logging the run of failures once", async () => {
    const { client, requests } = fakeClient(async (n) => {
      if (n <= 3) throw new ConnectError("connection refused", Code.Unavailable);
    });
    const { reporter: r, results, log } = reporter(client, () => report(1));
    r.start();
    await waitFor(() => results.includes("ok"));
    expect(results).toEqual(["error", "error", "error", "ok"]);
    expect(requests.map((q) => q.sequence)).toEqual([1n, 2n, 3n, 4n]);
    expect(
      log.withMessage("status report failed; retrying (applying config is not affected)"),
    ).toHaveLength(1);
    expect(log.withMessage("status reports are accepted again")).toHaveLength(1);
  });

  it("asks a registrar that answers UNIMPLEMENTED once, logged once at info, whatever changes", async () => {
    const { client, requests } = fakeClient(async () => {
      throw new ConnectError("not served", Code.Unimplemented);
    });
    let revision = 1;
    const { reporter: r, results, log } = reporter(client, () => report(revision));
    r.start();
    await waitFor(() => results.length === 1);
    for (revision = 2; revision < 20; revision++) {
      r.changed();
      await new Promise((resolve) => setImmediate(resolve));
    }
    // An absence cannot be awaited: 100 ms is several error backoffs (20 to 40 ms) long.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(requests).toHaveLength(1);
    expect(results).toEqual(["unimplemented"]);
    const told = log.lines.filter((l) => String(l.msg).startsWith("the registrar does not take"));
    expect(told.map((l) => l.level)).toEqual([30]);
  });
});
