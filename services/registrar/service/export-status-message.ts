/**
 * The export side of GetConfigStatus: the export controller's state as an
 * `ExportStatus` message, its lists bounded like the import side's (see
 * `status-summary.ts`). At most `limit` route rejections (default 100) are
 * listed, then, when there are more, a final one with reason `truncated`,
 * empty kind, namespace and name, and a `truncationNote` as its message. The
 * source problems arrive bounded by the source (a final entry whose `where`
 * is `(truncated)` counts the rest); they are bounded again here, that
 * count carried forward. Texts are capped at 1 KiB, and a rejection names at
 * most 20 services.
 */
import { create } from "@bufbuild/protobuf";
import {
  type ExportStatus as ExportStatusMessage,
  ExportStatusSchema,
  type RouteRejection as RouteRejectionMessage,
  RouteRejectionSchema,
  type SourceProblem as SourceProblemMessage,
  SourceProblemSchema,
} from "../../../gen/aether/registry/v1/config_service_pb.js";
import {
  boundList,
  capText,
  DEFAULT_LIST_LIMIT,
  omittedCount,
  TRUNCATED_REASON,
  TRUNCATED_WHERE,
  truncationNote,
} from "../../common/bounded-list.js";
import type { RouteRejection } from "../../common/projector.js";
import type { SourceProblem } from "../../sources/object-source.js";
import type { ExportStatus } from "../export/export-controller.js";
import { boundNames } from "./status-summary.js";

/**
 * Maps the export controller's state (`enabled`: whether it may export) to
 * the GetConfigStatus message, each list bounded to `limit` entries plus a
 * final count (see the module comment).
 */
export function exportStatusMessage(
  enabled: boolean,
  status: ExportStatus,
  limit: number = DEFAULT_LIST_LIMIT,
): ExportStatusMessage {
  return create(ExportStatusSchema, {
    enabled,
    disabledReason: capText(status.disabledReason ?? ""),
    source: capText(status.source),
    leader: status.leader,
    services: status.services,
    routeRejections: boundRouteRejections(status.rejections, limit),
    sourceProblems: boundSourceProblems(status.sourceProblems, limit),
    lastSuccessTime: status.lastSuccessAt?.toISOString() ?? "",
    lastError: capText(status.lastError ?? ""),
    signingKeyId: status.signingKeyId ?? "",
  });
}

/** The first `limit` rejections as messages, then a final one counting the rest. */
export function boundRouteRejections(
  rejections: readonly RouteRejection[],
  limit: number = DEFAULT_LIST_LIMIT,
): RouteRejectionMessage[] {
  const { items, omitted } = boundList(rejections, limit);
  const messages = items.map((r) =>
    create(RouteRejectionSchema, {
      kind: r.route.kind,
      namespace: capText(r.route.namespace),
      name: capText(r.route.name),
      reason: r.reason,
      message: capText(r.message),
      services: boundNames(r.services),
    }),
  );
  if (omitted > 0) {
    messages.push(
      create(RouteRejectionSchema, {
        reason: TRUNCATED_REASON,
        message: truncationNote(omitted, rejections.length, "route rejections"),
      }),
    );
  }
  return messages;
}

/**
 * The first `limit` source problems as messages, then a final one counting
 * the rest, including those a final `(truncated)` entry of the source counted.
 */
export function boundSourceProblems(
  problems: readonly SourceProblem[],
  limit: number = DEFAULT_LIST_LIMIT,
): SourceProblemMessage[] {
  const last = problems[problems.length - 1];
  const counted = last?.where === TRUNCATED_WHERE ? omittedCount(last.message) : undefined;
  const listed = counted === undefined ? problems : problems.slice(0, -1);
  const { items, omitted } = boundList(listed, limit);
  const messages = items.map((p) =>
    create(SourceProblemSchema, {
      where: capText(p.where),
      message: capText(p.message),
    }),
  );
  const hidden = omitted + (counted ?? 0);
  if (hidden > 0) {
    messages.push(
      create(SourceProblemSchema, {
        where: TRUNCATED_WHERE,
        message: truncationNote(hidden, listed.length + (counted ?? 0), "problems"),
      }),
    );
  }
  return messages;
}
