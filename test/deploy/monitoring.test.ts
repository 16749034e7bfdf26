/**
 * deploy/monitoring/: the Prometheus alert rules pass the real
 * `promtool check rules`, their unit tests pass `promtool test rules`, and
 * those tests really pin each alert (a copy of the rules without the `for:`
 * durations, with swapped severities or another summary fails for every
 * alert); every alert is named, labelled and annotated alike and has a firing
 * and a non-firing case; the fleet rules aggregate over registrars; the
 * Grafana dashboard parses, has unique panel ids, queries that promtool
 * parses as PromQL, and takes its data source from the `datasource`
 * variable; and every metric the rules, their tests and the dashboard name is
 * one the code under services/ and clients/ registers.
 *
 * promtool comes from Debian's `prometheus` package: scripts/ensure-test-deps.sh
 * installs it (the binary only, no daemon).
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import {
  alertChecks,
  alertRules,
  allPanels,
  DASHBOARD_FILE,
  MONITORING_DIR,
  mentionedMetrics,
  monitoringText,
  type Panel,
  RULES_FILE,
  RULES_TEST_FILE,
  registeredMetrics,
} from "./monitoring-files.js";

/** Runs promtool in `cwd`; its exit status and output. */
function promtool(args: string[], cwd: string): { status: number | null; output: string } {
  const result = spawnSync("promtool", args, { cwd, encoding: "utf8" });
  if (result.error !== undefined) {
    throw new Error(
      `promtool could not be run (${result.error.message}): run scripts/ensure-test-deps.sh as root`,
    );
  }
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** The data source every panel and query names: the dashboard's `datasource` variable. */
const DATASOURCE_VARIABLE = `\${datasource}`;

const rules = alertRules();
const alertNames = rules.map((rule) => rule.alert);

describe("deploy/monitoring alert rules (promtool)", () => {
  const scratch = mkdtempSync(join(tmpdir(), "aether-alerts-"));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("pass `promtool check rules`", () => {
    const { status, output } = promtool(["check", "rules", RULES_FILE], MONITORING_DIR);
    expect(output).toContain(`SUCCESS: ${rules.length} rules found`);
    expect(status).toBe(0);
  });

  it("pass their unit tests (`promtool test rules`)", () => {
    const { status, output } = promtool(["test", "rules", RULES_TEST_FILE], MONITORING_DIR);
    expect(output).toContain("SUCCESS");
    expect(status).toBe(0);
  });

  /** The rules file changed by `change`, tested against the unchanged unit tests. */
  const testMutated = (change: (text: string) => string) => {
    const dir = mkdtempSync(join(scratch, "mutant-"));
    const original = monitoringText(RULES_FILE);
    const mutated = change(original);
    expect(mutated).not.toBe(original);
    writeFileSync(join(dir, RULES_FILE), mutated);
    copyFileSync(join(MONITORING_DIR, RULES_TEST_FILE), join(dir, RULES_TEST_FILE));
    return promtool(["test", "rules", RULES_TEST_FILE], dir);
  };

  it.each([
    ["without its `for:` duration", (text: string) => text.replace(/^ *for: .*\n/gm, "")],
    [
      "with the other severity",
      (text: string) =>
        text.replace(/severity: (critical|warning)/g, (_, s) =>
          s === "critical" ? "severity: warning" : "severity: critical",
        ),
    ],
    ["with another summary", (text: string) => text.replace(/summary: "/g, 'summary: "Now: ')],
  ])("fail for every alert %s", (_, change) => {
    const { status, output } = testMutated(change);
    expect(status).not.toBe(0);
    for (const name of alertNames) expect(output).toContain(`alertname: ${name},`);
  });
});

describe("deploy/monitoring alert rules (shape)", () => {
  const checks = alertChecks();

  it("are named AetherConfig…, once each, with a severity, a `for:` and runbook annotations", () => {
    expect(rules.length).toBeGreaterThan(0);
    expect(new Set(alertNames).size).toBe(alertNames.length);
    for (const rule of rules) {
      expect(rule.alert).toMatch(/^AetherConfig[A-Z][A-Za-z]+$/);
      expect(["critical", "warning"]).toContain(rule.labels?.severity);
      expect(rule.for, rule.alert).toMatch(/^\d+m$/);
      expect(Object.keys(rule.annotations ?? {}).sort()).toEqual([
        "description",
        "runbook",
        "summary",
      ]);
    }
  });

  it("each has a firing case (its labels and every annotation) and a non-firing case", () => {
    for (const rule of rules) {
      const own = checks.filter((check) => check.alertname === rule.alert);
      expect(
        own.some((check) => (check.exp_alerts ?? []).length === 0),
        rule.alert,
      ).toBe(true);
      const firing = own.flatMap((check) => check.exp_alerts ?? []);
      expect(firing.length, rule.alert).toBeGreaterThan(0);
      for (const alert of firing) {
        expect(alert.exp_labels?.severity).toBe(rule.labels?.severity);
        expect(Object.keys(alert.exp_annotations ?? {}).sort()).toEqual(
          Object.keys(rule.annotations ?? {}).sort(),
        );
      }
    }
    expect(new Set(checks.map((check) => check.alertname))).toEqual(new Set(alertNames));
  });

  it("aggregate the fleet gauges (the same on every registrar) by cluster", () => {
    const fleet = rules.filter((rule) => rule.expr.includes("aether_config_fleet_"));
    expect(fleet.length).toBeGreaterThan(0);
    for (const rule of fleet) expect(rule.expr, rule.alert).toMatch(/^max by \(cluster\) \(/);
  });
});

describe("deploy/monitoring Grafana dashboard", () => {
  const dashboard = JSON.parse(monitoringText(DASHBOARD_FILE)) as {
    schemaVersion: number;
    uid: string;
    panels: Panel[];
    templating: {
      list: { name: string; type: string; query: unknown; datasource?: { uid?: string } }[];
    };
  };
  const panels = allPanels(dashboard.panels);
  const variable = (name: string) => dashboard.templating.list.find((v) => v.name === name);

  it("is a recent Grafana's dashboard with unique panel ids", () => {
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(39);
    expect(dashboard.uid).toMatch(/^[a-z0-9-]{1,40}$/);
    const ids = panels.map((panel) => panel.id);
    expect(ids.every((id) => Number.isInteger(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("has a Prometheus `datasource` variable and a `cluster` variable from label_values", () => {
    expect(variable("datasource")).toMatchObject({ type: "datasource", query: "prometheus" });
    const cluster = variable("cluster");
    expect(cluster?.type).toBe("query");
    expect(cluster?.datasource?.uid).toBe(DATASOURCE_VARIABLE);
    expect(JSON.stringify(cluster?.query)).toMatch(
      /label_values\(aether_config_fleet_\w+, cluster\)/,
    );
  });

  it("has queries that are PromQL (`promtool check rules` parses them as recording rules)", () => {
    const exprs = panels.flatMap((panel) => (panel.targets ?? []).map((t) => t.expr ?? ""));
    // Grafana's variables, as Grafana substitutes them; any other `$` would be left unresolved.
    const promql = exprs.map((expr) =>
      expr.replaceAll("$__rate_interval", "5m").replaceAll("$cluster", ".*"),
    );
    for (const expr of promql) expect(expr).not.toContain("$");
    const dir = mkdtempSync(join(tmpdir(), "aether-dashboard-"));
    try {
      const rules = promql.map((expr, i) => ({ record: `dashboard:query_${i}`, expr }));
      writeFileSync(
        join(dir, "queries.yaml"),
        stringify({ groups: [{ name: "dashboard", rules }] }),
      );
      const { status, output } = promtool(["check", "rules", "queries.yaml"], dir);
      expect(output).toContain(`SUCCESS: ${rules.length} rules found`);
      expect(status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("takes every panel's and every query's data source from the variable", () => {
    const dataPanels = panels.filter((panel) => panel.type !== "row");
    expect(dataPanels.length).toBeGreaterThan(0);
    for (const panel of dataPanels) {
      expect(panel.datasource, panel.title).toEqual({
        type: "prometheus",
        uid: DATASOURCE_VARIABLE,
      });
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) {
        expect(target.datasource, panel.title).toEqual(panel.datasource);
        expect(target.expr, panel.title).toMatch(/aether_/);
      }
    }
  });
});

describe("deploy/monitoring metric names", () => {
  const registered = registeredMetrics();

  it("finds the registered names in the sources (a scan that finds nothing proves nothing)", () => {
    const expected = [
      "aether_config_store_up",
      "aether_config_tls_handshake_failures_total",
      "aether_config_import_errors_total",
      "aether_config_propagation_lag_seconds_bucket",
    ];
    expect([...registered]).toEqual(expect.arrayContaining(expected));
    expect(registered).not.toContain("aether_config_store_up_bucket");
  });

  it.each([RULES_FILE, RULES_TEST_FILE, DASHBOARD_FILE])(
    "%s names only metrics the code registers",
    (file) => {
      const mentioned = [...mentionedMetrics(monitoringText(file))];
      expect(mentioned.length).toBeGreaterThan(0);
      expect(mentioned.filter((name) => !registered.has(name)).sort()).toEqual([]);
    },
  );
});
