/**
 * Reads deploy/monitoring/ (the Prometheus alert rules, their promtool unit
 * tests, the Grafana dashboard) and the metric names the code registers, for
 * test/deploy/monitoring.test.ts.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { ROOT } from "./rendered-manifests.js";

/** deploy/monitoring/, absolute. */
export const MONITORING_DIR = join(ROOT, "deploy/monitoring");
/** The alert rules file, relative to {@link MONITORING_DIR}. */
export const RULES_FILE = "aether-config-alerts.yaml";
/** The promtool unit tests of {@link RULES_FILE}, relative to {@link MONITORING_DIR}. */
export const RULES_TEST_FILE = "aether-config-alerts.test.yaml";
/** The Grafana dashboard, relative to {@link MONITORING_DIR}. */
export const DASHBOARD_FILE = "aether-config-dashboard.json";

/** One alerting rule of the rules file (the fields the tests read). */
export interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  readonly for?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

/** One `alert_rule_test` entry of a promtool test file. */
export interface AlertCheck {
  readonly eval_time: string;
  readonly alertname: string;
  readonly exp_alerts?: readonly {
    readonly exp_labels?: Readonly<Record<string, string>>;
    readonly exp_annotations?: Readonly<Record<string, string>>;
  }[];
}

/** A dashboard panel (rows included; the fields the tests read). */
export interface Panel {
  readonly id: number;
  readonly type: string;
  readonly title: string;
  readonly datasource?: { readonly type?: string; readonly uid?: string };
  readonly targets?: readonly {
    readonly expr?: string;
    readonly datasource?: { readonly type?: string; readonly uid?: string };
  }[];
  readonly panels?: readonly Panel[];
}

/** The text of a file of deploy/monitoring/. */
export function monitoringText(file: string): string {
  return readFileSync(join(MONITORING_DIR, file), "utf8");
}

/** Every alerting rule of the rules file, in file order. */
export function alertRules(): AlertRule[] {
  const doc = parse(monitoringText(RULES_FILE)) as { groups: { rules: AlertRule[] }[] };
  return doc.groups.flatMap((group) => group.rules);
}

/** Every `alert_rule_test` entry of the promtool test file. */
export function alertChecks(): AlertCheck[] {
  const doc = parse(monitoringText(RULES_TEST_FILE)) as {
    tests: { alert_rule_test?: AlertCheck[] }[];
  };
  return doc.tests.flatMap((test) => test.alert_rule_test ?? []);
}

/** Every panel of a dashboard, rows and the panels of collapsed rows included. */
export function allPanels(panels: readonly Panel[]): Panel[] {
  return panels.flatMap((panel) => [panel, ...allPanels(panel.panels ?? [])]);
}

/** The metric names (`aether_…`) a text mentions, each once. */
export function mentionedMetrics(text: string): Set<string> {
  return new Set(text.match(/\baether_[a-z0-9_]*[a-z0-9]\b/g) ?? []);
}

/** The TypeScript files under `dir` (relative to the repository root), recursively. */
function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/**
 * The metric names the code registers, read from the sources under services/
 * and clients/: every string literal that is a whole `aether_…` name (as
 * `name: "…"`, a helper's argument or a constant), and for each histogram
 * (`new Histogram({ name: "…" })`) the `_bucket`, `_sum` and `_count` series
 * prom-client exports.
 */
export function registeredMetrics(): Set<string> {
  const names = new Set<string>();
  for (const file of [...sourceFiles("services"), ...sourceFiles("clients")]) {
    const text = readFileSync(join(ROOT, file), "utf8");
    for (const [, name] of text.matchAll(/"(aether_[a-z0-9_]*[a-z0-9])"/g)) {
      if (name !== undefined) names.add(name);
    }
    for (const [, name] of text.matchAll(
      /new Histogram(?:<[^>]*>)?\(\{\s*name:\s*"(aether_\w+)"/g,
    )) {
      for (const suffix of ["_bucket", "_sum", "_count"]) names.add(`${name}${suffix}`);
    }
  }
  return names;
}
