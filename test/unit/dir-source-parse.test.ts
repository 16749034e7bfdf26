import { readdir, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import {
  parseCleanManifest,
  parseManifest,
  parseManifestThoroughly,
} from "../../services/sources/dir-parse.js";
import { isIgnoredName } from "../../services/sources/dir-source.js";
import {
  compareObjects,
  normalizeObject,
  sortObjects,
} from "../../services/sources/kube-snapshot.js";

const names = (text: string, file = "f.yaml") =>
  parseManifest(text, file).objects.map(
    (o) => `${o.object.kind}/${o.object.metadata?.name}@${o.line}`,
  );

describe("parseManifest", () => {
  it("reads every document in order, skipping empty ones", () => {
    const text = [
      "# a comment-only document",
      "---",
      "apiVersion: v1",
      "kind: Namespace",
      "metadata: {name: a}",
      "---",
      "---",
      "apiVersion: v1",
      "kind: Service",
      "metadata:",
      "  name: s",
      "  namespace: a",
      "",
    ].join("\n");
    expect(names(text)).toEqual(["Namespace/a@3", "Service/s@8"]);
    expect(parseManifest(text, "f.yaml").problems).toEqual([]);
  });

  it("reads JSON, including tab indentation", () => {
    const text =
      '{\n\t"apiVersion": "v1",\n\t"kind": "Namespace",\n\t"metadata": {"name": "j"}\n}\n';
    expect(names(text, "n.json")).toEqual(["Namespace/j@1"]);
  });

  it("expands kind List and typed lists, giving typed list items their kind", () => {
    const text = [
      "apiVersion: v1",
      "kind: List",
      "items:",
      "- apiVersion: v1",
      "  kind: Namespace",
      "  metadata: {name: one}",
      "- apiVersion: v1",
      "  kind: Namespace",
      "  metadata: {name: two}",
      "---",
      "apiVersion: v1",
      "kind: ServiceList",
      "items:",
      "- metadata: {name: s, namespace: one}",
    ].join("\n");
    const parsed = parseManifest(text, "l.yaml");
    expect(parsed.problems).toEqual([]);
    expect(names(text)).toEqual(["Namespace/one@4", "Namespace/two@7", "Service/s@14"]);
    expect(parsed.objects[2]?.object.apiVersion).toBe("v1");
  });

  it("reports a YAML error with the file and line", () => {
    const text = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n labels: x\n";
    const { objects, problems } = parseManifest(text, "dir/broken.yaml");
    expect(objects).toEqual([]);
    expect(problems).toEqual([
      {
        where: "dir/broken.yaml:5",
        message: "YAML error: All mapping items must start at the same column (column 1)",
      },
    ]);
    const tabbed = parseManifest("kind: A\nmetadata:\n\tname: a\n", "t.yaml").problems;
    expect(tabbed.map((p) => p.where)).toEqual(["t.yaml:3"]);
    expect(tabbed[0]?.message).toMatch(/Tabs are not allowed/);
  });

  it("reports a duplicate key", () => {
    const text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\nkind: Service\n";
    expect(parseManifest(text, "d.yaml").problems.map((p) => p.where)).toEqual(["d.yaml:4"]);
  });

  it("reports documents that are not Kubernetes objects, at their line", () => {
    const text = [
      "just a string",
      "---",
      "- a list",
      "---",
      "apiVersion: v1",
      "metadata: {name: no-kind}",
      "---",
      "apiVersion: v1",
      "kind: Service",
      "metadata: {namespace: a}",
      "---",
      "apiVersion: v1",
      "kind: Service",
      "metadata: {name: s, namespace: 7}",
      "---",
      "apiVersion: v1",
      "kind: List",
      "items:",
      "- 42",
    ].join("\n");
    const { problems } = parseManifest(text, "x.yaml");
    expect(problems).toEqual([
      {
        where: "x.yaml:1",
        message: "document 1 is a string, not a Kubernetes object",
      },
      { where: "x.yaml:3", message: "document 2 is a list, not a Kubernetes object" },
      { where: "x.yaml:5", message: "document 3 has no kind" },
      { where: "x.yaml:8", message: "document 4 Service has no metadata.name" },
      {
        where: "x.yaml:12",
        message: "document 5 Service s has a metadata.namespace that is not a non-empty string",
      },
      { where: "x.yaml:19", message: "item 1 of the List is a number, not a Kubernetes object" },
    ]);
  });

  it("reports an alias bomb instead of expanding it", () => {
    const lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
    for (let i = 0; i < 12; i++) {
      const prev = String.fromCharCode(97 + i);
      const next = String.fromCharCode(98 + i);
      lines.push(`${next}: &${next} [*${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}]`);
    }
    const { problems } = parseManifest(lines.join("\n"), "bomb.yaml");
    expect(problems).toHaveLength(1);
    expect(problems[0]?.where).toBe("bomb.yaml:1");
  });
});

describe("isIgnoredName", () => {
  it("skips hidden entries and editor leftovers only", () => {
    const ignored = [
      ".hidden.yaml",
      "..data",
      "..2024_01_01",
      ".#lock.yaml",
      "a.yaml~",
      "a.yaml.swp",
    ];
    const read = ["a.yaml", "b.yml", "c.json", "routes.v1.yaml"];
    expect(ignored.filter(isIgnoredName)).toEqual(ignored);
    expect(read.filter(isIgnoredName)).toEqual([]);
    expect(isIgnoredName("#a.yaml#")).toBe(true);
  });
});

describe("normalizeObject and the object order", () => {
  it("drops what the API server sets and keeps what the author wrote", () => {
    const served = {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: {
        name: "a",
        uid: "u",
        resourceVersion: "9",
        generation: 2,
        creationTimestamp: "2026-01-01T00:00:00Z",
        managedFields: [{ manager: "kubectl" }],
        labels: { "kubernetes.io/metadata.name": "a", team: "x" },
        annotations: { "kubectl.kubernetes.io/last-applied-configuration": "{}" },
      },
      status: { phase: "Active" },
    };
    expect(normalizeObject(served)).toEqual({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "a", labels: { team: "x" } },
    });
    expect(
      normalizeObject(served, { keepCreationTimestamp: true }).metadata?.creationTimestamp,
    ).toBe("2026-01-01T00:00:00Z");
    expect(served.metadata.uid).toBe("u"); // the input is not changed
  });

  it("orders by apiVersion, kind, namespace and name, by code units", () => {
    const o = (apiVersion: string, kind: string, namespace: string | undefined, name: string) => ({
      apiVersion,
      kind,
      metadata: { name, ...(namespace === undefined ? {} : { namespace }) },
    });
    const sorted = sortObjects([
      o("v1", "Service", "b", "a"),
      o("gateway.networking.k8s.io/v1", "HTTPRoute", "a", "z"),
      o("v1", "Namespace", undefined, "b"),
      o("v1", "Service", "a", "b"),
      o("v1", "Service", "a", "B"),
    ]);
    expect(sorted.map((x) => `${x.kind}/${x.metadata.namespace ?? ""}/${x.metadata.name}`)).toEqual(
      ["HTTPRoute/a/z", "Namespace//b", "Service/a/B", "Service/a/b", "Service/b/a"],
    );
    expect(compareObjects(sorted[0] as object, sorted[0] as object)).toBe(0);
  });
});

describe("parseManifest's fast path", () => {
  /** Every manifest of the examples and the fixtures, as text. */
  async function manifestTexts(): Promise<[string, string][]> {
    const root = resolve(import.meta.dirname, "../..");
    const found: [string, string][] = [];
    const visit = async (dir: string): Promise<void> => {
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) await visit(path);
        else if (/\.(ya?ml|json)$/.test(entry.name))
          found.push([path, await readFile(path, "utf8")]);
      }
    };
    for (const dir of ["examples", "test/fixtures"]) await visit(join(root, dir));
    return found;
  }

  const object = (body: string) =>
    `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: n\n${body}`;

  /** Inputs where the two libraries could disagree; each must give the same result either way. */
  const tricky: Record<string, string> = {
    scalars: object(
      "data:\n  i: 12\n  neg: -7\n  plus: +3\n  oct: 0o17\n  octLike: 0755\n  hex: 0x1F\n  negHex: -0x1F\n" +
        "  under: 1_000\n  bin: 0b101\n  f: 1.50\n  e: 1e3\n  dot: .5\n  inf: -.inf\n  nan: .NaN\n" +
        "  t: true\n  T: True\n  y: yes\n  on: on\n  n: ~\n  N: NULL\n  empty:\n  date: 2026-11-01T09:00:00Z\n" +
        "  sexagesimal: 1:20\n  q: '12'\n  dq: \"true\"\n",
    ),
    strings: object(
      "data:\n  folded: >\n    a\n    b\n\n    c\n  literal: |-\n    x\n      y\n  keep: |+\n    k\n\n" +
        "  plain: multi\n    line plain\n  esc: \"tab\\tnl\\n\\u263A\\x41\"\n  single: 'it''s'\n  colon: a:b\n  hash: a #b\n",
    ),
    flow: object('data: {a: 1, "b": [x, y, {z: null}], c: [ ]}\n'),
    keys: object("data:\n  80: port\n  true: yes\n  1.0: one\n  '~': tilde\n"),
    nullKey: object("data:\n  ~: nothing\n"),
    quotedNullKey: object('data:\n  "null": quoted\n'),
    duplicateKey: object("data:\n  a: 1\n  a: 2\n"),
    anchors: object("data: &d\n  a: 1\nother: *d\n"),
    scalarAlias: object("x: &v 3\ny: *v\n"),
    tags: object("data:\n  s: !!str 12\n  i: !!int '7'\n  custom: !thing x\n"),
    merge: object("base: &b {a: 1}\ndata:\n  <<: *b\n  c: 2\n"),
    directive: `%YAML 1.2\n---\n${object("")}`,
    documentEnd: `${object("")}...\n`,
    crlf: object("data:\n  a: b\n").replaceAll("\n", "\r\n"),
    commentsAndMarkers: `# lead\n\n--- # first\n# inside\n${object("")}---\n---\n\n  # indented comment\n${object("x: 1\n")}`,
    inlineAfterMarker: '--- {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}\n',
    list: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n",
    notObject: "- a\n- b\n",
    missingName: "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
    syntaxError: object("data: [unclosed\n"),
    tabIndent: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: c\n",
    empty: "",
    onlyComments: "# nothing\n# here\n",
    emptyDocuments: `---\n---\n${object("")}---\n`,
  };

  it("gives exactly what the yaml library gives, for every example and fixture and for tricky input", async () => {
    const inputs: [string, string][] = [...(await manifestTexts()), ...Object.entries(tricky)];
    expect(inputs.length).toBeGreaterThan(Object.keys(tricky).length);
    for (const [name, text] of inputs) {
      expect(parseManifest(text, "f.yaml"), name).toEqual(parseManifestThoroughly(text, "f.yaml"));
      const fast = parseCleanManifest(text);
      if (fast !== undefined) expect(fast, name).toEqual(parseManifestThoroughly(text, "f.yaml"));
    }
  });

  it("takes the fast path for clean manifests, and leaves anything doubtful to the yaml library", async () => {
    for (const [name, text] of await manifestTexts()) {
      if (parseManifestThoroughly(text, "f.yaml").problems.length === 0) {
        expect(parseCleanManifest(text), name).toBeDefined();
      }
    }
    for (const name of [
      "scalars",
      "strings",
      "flow",
      "keys",
      "crlf",
      "commentsAndMarkers",
      "emptyDocuments",
    ]) {
      expect(parseCleanManifest(tricky[name] as string), name).toBeDefined();
    }
    for (const name of [
      "nullKey",
      "quotedNullKey",
      "duplicateKey",
      "anchors",
      "tags",
      "directive",
      "documentEnd",
      "list",
      "notObject",
      "missingName",
      "syntaxError",
    ]) {
      expect(parseCleanManifest(tricky[name] as string), name).toBeUndefined();
    }
  });
});
