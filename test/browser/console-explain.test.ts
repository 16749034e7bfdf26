/**
 * The Explain view in a real browser against the sandbox: for each
 * `aetherctl explain` example of the README (but `--agent`'s), the form
 * filled as the command line says, submitted with Enter, gives the decision
 * `aetherctl explain … -o json` gives against the same registrar (the hub,
 * with the operator's TLS, through `aetherctl dashboard`) with the same
 * seed: outcome, status, route, rule, match, backend, redirect, filters;
 * the first also in origin hub's projections (`--origin`), and the
 * producer's weighted split, which the README's callers do not reach.
 * The decision's URL, opened anew, gives it again. And through the
 * sandbox's own console (which reads east's and west's agents), as west's
 * agent, whose local override of shop/checkout differs from the hub's: the
 * decision `aetherctl explain --agent <west's URL> -o json` gives, and not
 * the effective view's. Screenshot `explain.png`; no console error and no
 * request beyond the dashboard.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAetherctlInProcess } from "../support/aetherctl-in-process.js";
import { launchBrowser, openConsole } from "../support/browser.js";
import { CONSOLE_DIST } from "../support/console-build.js";
import { type RunningDashboard, startDashboard } from "../support/dashboard-run.js";
import { aetherVariablesAfter, printedSession, shellWords } from "../support/sandbox-commands.js";
import { type SandboxProcess, startSandbox, stopQuietly } from "../support/sandbox-process.js";

const ROOT = resolve(import.meta.dirname, "../..");
const SEED = "4";

/** The README's `aetherctl explain` examples: the words after `explain`, comments dropped. */
async function readmeExamples(): Promise<string[][]> {
  const lines = readFileSync(resolve(ROOT, "README.md"), "utf8")
    .split("\n")
    .filter((line) => /aetherctl(\.js)? .*\bexplain /.test(line) && !line.includes("`aetherctl"))
    .map((line) => (line.split(/\bexplain /)[1] as string).replace(/\s+#.*$/, "").trim());
  const unique = [...new Set(lines)].filter((args) => !args.includes("--agent"));
  return Promise.all(unique.map(shellWords));
}

/** An explain command line as the form's fields. */
function formOf(args: readonly string[]) {
  const fields = {
    ...{ method: "GET", url: "", from: "", port: "", grpc: "", origin: "" },
    headers: [] as string[],
  };
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const word = args[i] as string;
    const value = args[i + 1] ?? "";
    if (word === "--from-namespace") fields.from = value;
    else if (word === "-H") fields.headers.push(value);
    else if (word === "--port") fields.port = value;
    else if (word === "--grpc") fields.grpc = value;
    else if (word === "--origin") fields.origin = value;
    else {
      positionals.push(word);
      continue;
    }
    i++;
  }
  if (fields.grpc === "") [fields.method = "GET", fields.url = ""] = positionals;
  else fields.url = positionals[0] ?? "";
  return fields;
}

/**
 * Fills the Explain form with `args` (and with `agent`, chooses that agent's
 * route table) and submits it with Enter.
 */
async function fillAndSubmit(page: Page, args: readonly string[], agent?: string): Promise<void> {
  const form = formOf(args);
  const field = (label: string) => page.getByLabel(label, { exact: true });
  await field("Method").fill(form.method);
  await field("Caller namespace").fill(form.from);
  await field("Port").fill(form.port);
  await field("gRPC method").fill(form.grpc);
  await field("Origin cluster").fill(form.origin);
  await field("Seed").fill(SEED);
  for (const [index, header] of form.headers.entries()) {
    await page.getByRole("button", { name: "Add header" }).click();
    const colon = header.indexOf(":");
    await field(`Header ${index + 1} name`).fill(header.slice(0, colon).trim());
    await field(`Header ${index + 1} value`).fill(header.slice(colon + 1).trim());
  }
  if (agent !== undefined) await field("Agent").selectOption(agent);
  await field("URL").fill(form.url);
  await field("URL").press("Enter");
}

/** The text of each row of the decision shown, by its key. */
async function shownRows(page: Page): Promise<Record<string, string>> {
  await page.locator('[data-row="outcome"]').waitFor();
  const rows = await page
    .locator(".decision > div")
    .evaluateAll((divs) =>
      divs.map((div) => [
        div.getAttribute("data-row") ?? "",
        [...div.querySelectorAll("dd li")].map((li) => li.textContent).join(" | ") ||
          (div.querySelector("dd")?.textContent ?? ""),
      ]),
    );
  return Object.fromEntries(rows);
}

interface CliDecision {
  outcome: string;
  status: number;
  route?: { kind: string; namespace: string; name: string; role: string };
  ruleIndex?: number;
  matchIndex?: number;
  backend?: { service: string; port: number; index: number };
  redirect?: { statusCode: number; location: string };
  requestHeaderChanges: { op: string; name: string; value: string }[];
  httpFilters?: { namespace: string; name: string }[];
}

/** What the console must show for the CLI's decision (rows by key; prefixes where it adds words). */
function expectedRows(cli: CliDecision) {
  return {
    outcome: cli.outcome,
    status: expect.stringMatching(new RegExp(`^${cli.status}\\b`)),
    ...(cli.route === undefined
      ? {}
      : {
          route: `${cli.route.kind} ${cli.route.namespace}/${cli.route.name} (${cli.route.role})`,
        }),
    ...(cli.ruleIndex === undefined
      ? {}
      : { rule: expect.stringMatching(new RegExp(`^#${cli.ruleIndex}\\b`)) }),
    ...(cli.matchIndex === undefined
      ? {}
      : { match: expect.stringMatching(new RegExp(`^#${cli.matchIndex}:`)) }),
    ...(cli.backend === undefined
      ? {}
      : { backend: expect.stringContaining(`${cli.backend.service}:${cli.backend.port} (`) }),
    ...(cli.redirect === undefined
      ? {}
      : { redirect: `${cli.redirect.statusCode} Location: ${cli.redirect.location}` }),
  };
}

/** The filters the CLI says ran, as the console's "Applied, in order" names them. */
function expectedApplied(cli: CliDecision): string[] {
  return [
    ...(cli.httpFilters ?? []).map((f) => `HTTP filter ${f.namespace}/${f.name}`),
    ...cli.requestHeaderChanges.map(
      (c) => `request header ${c.op} ${c.name}${c.op === "remove" ? "" : `: ${c.value}`}`,
    ),
  ];
}

let stateDir: string;
let sandbox: SandboxProcess;
let dashboard: RunningDashboard;
let browser: Browser;
let env: Record<string, string>;
let hub: string;

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), "aether-console-explain-"));
  sandbox = await startSandbox([
    ...["--base-port", "0", "--pki-dir", join(stateDir, "pki")],
    ...["--signing-dir", join(stateDir, "signing")],
  ]);
  hub = sandbox.registrars.get("hub") as string;
  const ctl = printedSession(sandbox.commands).find((line) => line.command.includes("aetherctl"));
  env = await aetherVariablesAfter(ctl?.before ?? [], ROOT);
  dashboard = await startDashboard(["--registrar", hub, "--assets", CONSOLE_DIST], { env });
  browser = await launchBrowser();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await dashboard?.stop();
  if (sandbox !== undefined) await stopQuietly(sandbox);
  if (stateDir !== undefined) await rm(stateDir, { recursive: true, force: true });
});

describe("the Explain view against the sandbox's hub", () => {
  it("gives aetherctl explain's decision for each of the README's examples", async () => {
    const readme = await readmeExamples();
    expect(readme.length).toBeGreaterThanOrEqual(3);
    // And the producer's weighted split, which the README's callers (web) do not reach.
    // The first in one origin's projections (ListConfig) rather than the effective view.
    const examples = [
      ...readme,
      ["--origin", "hub", ...(readme[0] ?? [])],
      ["--from-namespace", "shop", "GET", "http://checkout.shop:8080/"],
    ];
    for (const [n, args] of examples.entries()) {
      const run = await runAetherctlInProcess(
        ["--registrar", hub, "explain", ...args, "--seed-random", SEED, "-o", "json"],
        { env },
      );
      expect({ args, code: run.code, stderr: run.stderr }).toMatchObject({ code: 0 });
      // Absent fields are null in the JSON: drop them.
      const cli = JSON.parse(run.stdout, (_, v) => (v === null ? undefined : v)) as CliDecision;
      const { page, errors, foreign } = await openConsole(browser, `${dashboard.url}#/explain`);
      await fillAndSubmit(page, args);
      const rows = await shownRows(page);
      expect({ args, rows }).toMatchObject({ args, rows: expectedRows(cli) });
      expect((rows.applied ?? "").split(" | ").filter((line) => line !== "")).toEqual(
        expect.arrayContaining(expectedApplied(cli)),
      );
      if (cli.backend !== undefined && n === examples.length - 1) {
        const chosen = page.locator("table.choices tr.chosen td").first();
        expect(await chosen.textContent()).toBe(
          `${cli.backend.service}:${cli.backend.port} (chosen)`,
        );
        expect(await page.locator("table.choices tbody tr").count()).toBeGreaterThan(1);
      }
      // The decision is a link: the same URL in a new page shows it again.
      const linked = await openConsole(browser, page.url());
      expect(await shownRows(linked.page)).toEqual(rows);
      // The split's decision, as it shows once evaluated.
      if (n === examples.length - 1) await linked.screenshot("explain");
      expect([...errors, ...linked.errors]).toEqual([]);
      expect([...foreign, ...linked.foreign]).toEqual([]);
      await Promise.all([page.close(), linked.page.close()]);
    }
  }, 120_000);
});

describe("the Explain view as one cluster's agent (the sandbox's console)", () => {
  it("gives aetherctl explain --agent's decision for west, which is not the effective view's", async () => {
    const west = sandbox.agents.get("west") as string;
    const args = ["--from-namespace", "web", "GET", "http://checkout.shop:8080/"];
    const cli = async (extra: string[]) => {
      const run = await runAetherctlInProcess(
        ["--registrar", hub, "explain", ...extra, ...args, "--seed-random", SEED, "-o", "json"],
        { env },
      );
      expect({ code: run.code, stderr: run.stderr }).toMatchObject({ code: 0 });
      return JSON.parse(run.stdout, (_, v) => (v === null ? undefined : v)) as CliDecision & {
        agentRoute?: { source: string; origin: string; version: string };
      };
    };
    const [asWest, effective] = await Promise.all([cli(["--agent", west]), cli([])]);
    expect(asWest.agentRoute).toMatchObject({ source: "local", origin: "west" });

    const { page, errors, foreign } = await openConsole(browser, `${sandbox.console}#/explain`);
    // The Agent choice shows once the console read the dashboard's GET /agents.
    const choices = page.getByLabel("Agent", { exact: true }).locator("option");
    await expect
      .poll(() => choices.allTextContents(), { timeout: 10_000 })
      .toEqual(["none: the registrar's view", "agent east", "agent west"]);
    await fillAndSubmit(page, args, "west");
    const rows = await shownRows(page);
    expect(rows).toMatchObject(expectedRows(asWest));
    expect((rows.applied ?? "").split(" | ")).toEqual(
      expect.arrayContaining(expectedApplied(asWest)),
    );
    expect(await page.locator(".agent-route").textContent()).toBe(
      `Agent west's entry for shop/checkout: local, from cluster west (version ${asWest.agentRoute?.version}): the cluster's local override.`,
    );
    expect(page.url()).toContain("agent=west");

    // The same request in the effective view: the hub's decision, not west's.
    const linked = await openConsole(browser, page.url().replace("agent=west", "agent="));
    const effectiveRows = await shownRows(linked.page);
    expect(effectiveRows).toMatchObject(expectedRows(effective));
    expect(effectiveRows).not.toEqual(rows);
    expect(expectedApplied(effective)).not.toEqual(expectedApplied(asWest));
    expect(await linked.page.locator(".agent-route").count()).toBe(0);
    expect([...errors, ...linked.errors]).toEqual([]);
    expect([...foreign, ...linked.foreign]).toEqual([]);
    await Promise.all([page.close(), linked.page.close()]);
  }, 60_000);
});

describe("the Explain view's problems", () => {
  it("says why a request cannot be explained and marks its field", async () => {
    const { page, errors, foreign } = await openConsole(browser, `${dashboard.url}#/explain`);
    await fillAndSubmit(page, ["--from-namespace", "web", "GET", "http://10.0.0.1:8080/"]);
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("is an IP address");
    expect(await page.getByLabel("URL", { exact: true }).getAttribute("aria-invalid")).toBe("true");
    expect(page.url()).toContain("url=http%3A%2F%2F10.0.0.1%3A8080%2F");
    expect(errors).toEqual([]);
    expect(foreign).toEqual([]);
    await page.close();
  });
});
