/**
 * The export controller's Prometheus metrics (names mirror the OpenTelemetry
 * names `aether.config.export.*`), registered in the registrar's registry.
 */
import { Counter, Gauge, type Registry } from "prom-client";
import { ROUTE_REJECTION_REASONS } from "../../common/projector.js";
import { REPAIR_KINDS, type RepairKind } from "./own-key-change.js";

/** What the export controller reports as it works. */
export interface ExportMetrics {
  /** Sets whether this registrar currently holds the export leadership. */
  setLeader(leader: boolean): void;
  /** Sets how many projections this registrar exported in its last successful reconcile. */
  setServices(count: number): void;
  /** Counts one store write of the given kind. */
  countWrite(op: "put" | "delete"): void;
  /** Counts one write that repaired an own key another writer had changed, by what it undid. */
  countRepair(kind: RepairKind): void;
  /** Counts one failed reconcile (store down, fenced write, unexpected error). */
  countError(): void;
  /** Counts one newly seen route rejection, by the projector's reason. */
  countRejection(reason: string): void;
  /** Sets the time of the last successful reconcile, in seconds since the Unix epoch. */
  setLastSuccess(epochSeconds: number): void;
}

/** Creates metrics that record nothing (the default of a controller without a registry). */
export function createNoopExportMetrics(): ExportMetrics {
  return {
    setLeader() {},
    setServices() {},
    countWrite() {},
    countRepair() {},
    countError() {},
    countRejection() {},
    setLastSuccess() {},
  };
}

/**
 * Registers the export metrics in `registry` and returns the handle that
 * updates them: `aether_config_export_services`,
 * `aether_config_export_writes_total{op}`,
 * `aether_config_export_repairs_total{kind}` (each kind pre-registered at 0),
 * `aether_config_export_errors_total`,
 * `aether_config_export_rejections_total{reason}` (every projector reason at 0 from the start),
 * `aether_config_export_leader` and
 * `aether_config_export_last_success_timestamp_seconds`.
 */
export function createExportMetrics(registry: Registry): ExportMetrics {
  const services = new Gauge({
    name: "aether_config_export_services",
    help: "Projections this registrar exported in its last successful reconcile (0 when not exporting).",
    registers: [registry],
  });
  const writes = new Counter({
    name: "aether_config_export_writes_total",
    help: "Store writes of the export controller, by operation (put or delete).",
    labelNames: ["op"],
    registers: [registry],
  });
  for (const op of ["put", "delete"]) writes.inc({ op }, 0);
  const repairs = new Counter({
    name: "aether_config_export_repairs_total",
    help: "Export writes that repaired an own key another writer had changed, by what they undid: put (foreign content of an exported service), delete (an exported service deleted), foreign_put (a service not exported).",
    labelNames: ["kind"],
    registers: [registry],
  });
  for (const kind of REPAIR_KINDS) repairs.inc({ kind }, 0);
  const errors = new Counter({
    name: "aether_config_export_errors_total",
    help: "Failed export reconciles (store unavailable, fenced write, unexpected error).",
    registers: [registry],
  });
  const rejections = new Counter({
    name: "aether_config_export_rejections_total",
    help: "Routes the projector rejected, by reason (each rejection counted once when first seen).",
    labelNames: ["reason"],
    registers: [registry],
  });
  for (const reason of ROUTE_REJECTION_REASONS) rejections.inc({ reason }, 0);
  const leader = new Gauge({
    name: "aether_config_export_leader",
    help: "1 while this registrar holds the export leadership of its cluster, 0 otherwise.",
    registers: [registry],
  });
  leader.set(0);
  const lastSuccess = new Gauge({
    name: "aether_config_export_last_success_timestamp_seconds",
    help: "When the export controller last reconciled the store successfully (Unix seconds).",
    registers: [registry],
  });
  return {
    setLeader: (value) => leader.set(value ? 1 : 0),
    setServices: (count) => services.set(count),
    countWrite: (op) => writes.inc({ op }),
    countRepair: (kind) => repairs.inc({ kind }),
    countError: () => errors.inc(),
    countRejection: (reason) => rejections.inc({ reason }),
    setLastSuccess: (seconds) => lastSuccess.set(seconds),
  };
}
