/**
 * `aetherctl etcd-rbac` without etcd: the plan (exactly read on the prefix
 * and read-write on the cluster's own subtree), the etcdctl script it
 * prints, and its command line (what it refuses, and how aetherctl tells it
 * from the registrar commands). `--apply` against a real etcd is in
 * test/integration/etcd-rbac.test.ts.
 */
import { describe, expect, it } from "vitest";
import { GLOBAL_VALUE_FLAGS } from "../../clients/aetherctl/aetherctl-flags.js";
import { runEtcdRbac } from "../../clients/aetherctl/commands/etcd-rbac.js";
import {
  isEtcdRbacCommandLine,
  parseEtcdRbacFlags,
} from "../../clients/aetherctl/etcd-rbac-flags.js";
import {
  etcdctlCommands,
  formatEtcdRbacScript,
  planEtcdRbac,
  shellQuote,
} from "../../clients/aetherctl/etcd-rbac-plan.js";
import { UsageError } from "../../services/process/usage-error.js";

describe("etcd-rbac plan", () => {
  it("gives each cluster read on the prefix and read-write on its own subtree, nothing else", () => {
    const grants = planEtcdRbac("/aether/v1", ["hub", "east"]);
    expect(grants.map((g) => g.cluster)).toEqual(["hub", "east"]);
    for (const grant of grants) {
      const name = `aether-${grant.cluster}`;
      expect(grant).toEqual({
        cluster: grant.cluster,
        role: name,
        user: name,
        permissions: [
          { type: "read", keyPrefix: "/aether/v1/" },
          { type: "readwrite", keyPrefix: `/aether/v1/clusters/${grant.cluster}/` },
        ],
      });
    }
  });

  it("prints copy-pasteable etcdctl commands, one cluster after another", () => {
    const [hub] = planEtcdRbac("/aether/v1", ["hub"]);
    expect(etcdctlCommands(hub as NonNullable<typeof hub>)).toEqual([
      "etcdctl role add aether-hub",
      "etcdctl role grant-permission aether-hub --prefix=true read /aether/v1/",
      "etcdctl role grant-permission aether-hub --prefix=true readwrite /aether/v1/clusters/hub/",
      "etcdctl user add aether-hub --no-password",
      "etcdctl user grant-role aether-hub aether-hub",
    ]);
    const script = formatEtcdRbacScript("/p", planEtcdRbac("/p", ["a", "b"]));
    const commands = script.split("\n").filter((line) => line.startsWith("etcdctl"));
    expect(commands).toHaveLength(10);
    expect(script.indexOf("# cluster a")).toBeLessThan(script.indexOf("# cluster b"));
    expect(script.indexOf("etcdctl role add aether-b")).toBeGreaterThan(
      script.indexOf("# cluster b"),
    );
  });

  it.each([
    ["/aether/v1/", "/aether/v1/"],
    ["/my prefix/", "'/my prefix/'"],
    ["/it's/", `'/it'"'"'s/'`],
    ["/$HOME/", "'/$HOME/'"],
  ])("quotes %j for the shell as %s", (word, quoted) => {
    expect(shellQuote(word)).toBe(quoted);
  });
});

describe("etcd-rbac command line", () => {
  it.each([
    [["etcd-rbac", "--cluster", "hub"], "/aether/v1", ["hub"]],
    [["etcd-rbac", "--prefix", "/x/y/", "--cluster", "a", "--cluster", "b"], "/x/y", ["a", "b"]],
    [["--cluster", "a", "etcd-rbac"], "/aether/v1", ["a"]],
  ])("parses %j", (argv, prefix, clusters) => {
    expect(parseEtcdRbacFlags(argv)).toEqual({ kind: "run", prefix, clusters, apply: undefined });
  });

  it.each([
    [["etcd-rbac"], "at least one --cluster"],
    [["etcd-rbac", "--cluster", "Hub"], "--cluster"],
    [["etcd-rbac", "--cluster", "a", "--cluster", "a"], "given twice"],
    [["etcd-rbac", "--cluster", "a", "--prefix", "rel"], "--prefix"],
    [["etcd-rbac", "--cluster", "a", "extra"], "takes no arguments"],
    [
      ["etcd-rbac", "--cluster", "a", "--etcd-endpoints", "http://e:2379"],
      "only used with --apply",
    ],
    [["etcd-rbac", "--cluster", "a", "--apply"], "--apply needs --etcd-endpoints"],
    [
      [
        "etcd-rbac",
        "--cluster",
        "a",
        "--apply",
        "--etcd-endpoints",
        "http://e:2379",
        "--etcd-ca-file",
        "/x",
      ],
      "https://",
    ],
    [
      [
        "etcd-rbac",
        "--cluster",
        "a",
        "--apply",
        "--etcd-endpoints",
        "http://e",
        "--etcd-username",
        "root",
      ],
      "--etcd-password-file",
    ],
  ])("refuses %j", (argv, message) => {
    expect(() => parseEtcdRbacFlags(argv)).toThrow(UsageError);
    expect(() => parseEtcdRbacFlags(argv)).toThrow(message);
  });

  it("parses --apply with endpoints and a timeout", () => {
    const line = parseEtcdRbacFlags([
      "etcd-rbac",
      "--cluster",
      "a",
      "--apply",
      "--etcd-endpoints",
      "http://127.0.0.1:2379",
      "--timeout",
      "3s",
    ]);
    expect(line.kind === "run" && line.apply).toMatchObject({
      endpoints: ["http://127.0.0.1:2379"],
      timeoutMs: 3_000,
    });
  });

  it.each([
    [["etcd-rbac", "--cluster", "a"], true],
    [["--registrar", "http://r", "etcd-rbac"], true],
    [["--prefix", "/etcd-rbac", "etcd-rbac"], true],
    [["help", "etcd-rbac"], true],
    [["list", "etcd-rbac"], false],
    [["--registrar", "etcd-rbac", "list"], false],
    [["status"], false],
  ])("tells %j is etcd-rbac's: %s", (argv, expected) => {
    expect(isEtcdRbacCommandLine(argv, GLOBAL_VALUE_FLAGS)).toBe(expected);
  });

  it("prints the script (exit 0), and a usage error with its usage (exit 2)", async () => {
    const out: string[] = [];
    const err: string[] = [];
    const io = { stdout: (t: string) => out.push(t), stderr: (t: string) => err.push(t) };
    expect(await runEtcdRbac(["etcd-rbac", "--cluster", "east"], io)).toBe(0);
    expect(out.join("")).toContain("etcdctl user add aether-east --no-password\n");
    expect(await runEtcdRbac(["etcd-rbac"], io)).toBe(2);
    expect(err.join("")).toMatch(
      /^aetherctl: etcd-rbac needs at least one --cluster NAME\n\nUsage: aetherctl etcd-rbac/,
    );
  });
});
