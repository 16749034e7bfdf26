/**
 * The HTTPFilter CRD (deploy/crds/httpfilter-crd.yaml), read as the file it
 * is (no kubectl needed): it defines the kind the Kubernetes source watches,
 * its CEL rule names exactly the extensions the schema has, and its
 * patterns and enums accept and refuse what the projector does. Every
 * HTTPFilter in examples/ is checked against the schema's structure (types,
 * enums, patterns, required fields, bounds) by a small walker.
 */
import { describe, expect, it } from "vitest";
import { KUBERNETES_SOURCE_RESOURCES } from "../../services/sources/kubernetes-source.js";
import { schemaProblems as check, exampleObjects, readCrd, type Schema } from "./crd-files.js";

/** A served version of the CRD: its name, flags and schema. */
interface CrdVersion {
  readonly name: string;
  readonly served: boolean;
  readonly storage: boolean;
  readonly schema: { readonly openAPIV3Schema: Schema };
}

/** The CRD object, the fields the tests read. */
interface CustomResourceDefinition {
  readonly kind: string;
  readonly metadata: { readonly name: string };
  readonly spec: {
    readonly scope: string;
    readonly names: { readonly kind: string; readonly plural: string };
    readonly versions: readonly CrdVersion[];
  };
}

const EXTENSIONS = ["lua", "wasm", "extProc", "extAuthz", "headerMutation"];

const crd = () => readCrd<CustomResourceDefinition>("httpfilter-crd.yaml");

describe("the HTTPFilter CRD", () => {
  it("defines the namespaced kind the Kubernetes source watches", async () => {
    const object = await crd();
    const watched = KUBERNETES_SOURCE_RESOURCES.find((r) => r.kind === "HTTPFilter");
    expect(object.kind).toBe("CustomResourceDefinition");
    expect(object.metadata.name).toBe(`${watched?.plural}.${watched?.group}`);
    expect(object.spec.scope).toBe("Namespaced");
    expect(object.spec.names).toMatchObject({ kind: "HTTPFilter", plural: watched?.plural });
    const version = object.spec.versions.find((v) => v.name === watched?.version);
    expect(version).toMatchObject({ served: true, storage: true });
  });

  it("requires exactly one extension, naming each the schema has", async () => {
    const spec = (await crd()).spec.versions[0]?.schema.openAPIV3Schema.properties?.spec as Schema;
    const extensions = Object.keys(spec.properties ?? {}).filter(
      (k) => !["targetRefs", "phase", "priority"].includes(k),
    );
    expect(extensions.sort()).toEqual([...EXTENSIONS].sort());
    const [rule, ...others] = spec["x-kubernetes-validations"] ?? [];
    expect(others).toEqual([]);
    for (const name of EXTENSIONS) expect(rule?.rule).toContain(`has(self.${name})`);
    expect(rule?.rule).toMatch(/\.size\(\) == 1$/);
  });

  it("takes Service targets only, a 64-hex sha256 and the phases and failure modes the projector reads", async () => {
    const spec = (await crd()).spec.versions[0]?.schema.openAPIV3Schema.properties?.spec as Schema;
    const target = spec.properties?.targetRefs?.items as Schema;
    expect(target.properties?.group?.enum).toEqual([""]);
    expect(target.properties?.kind?.enum).toEqual(["Service"]);
    const sha = spec.properties?.wasm?.properties?.sha256 as Schema;
    expect(check("a".repeat(64), sha, "sha256")).toEqual([]);
    expect(check("A".repeat(64), sha, "sha256")).not.toEqual([]);
    expect(check("a".repeat(63), sha, "sha256")).not.toEqual([]);
    expect(check(`${"a".repeat(64)}0`, sha, "sha256")).not.toEqual([]);
    expect(spec.properties?.phase?.enum).toEqual(["AuthN", "AuthZ", "Stats", "Default"]);
    for (const ext of ["extProc", "extAuthz"]) {
      expect(spec.properties?.[ext]?.properties?.failureMode?.enum).toEqual(["Deny", "Allow"]);
    }
  });

  it("accepts every HTTPFilter in examples/", async () => {
    const schema = (await crd()).spec.versions[0]?.schema.openAPIV3Schema as Schema;
    const filters = await exampleObjects("examples", "HTTPFilter");
    expect(filters.length).toBeGreaterThan(0);
    for (const { object: filter } of filters) {
      const { status: _status, ...rest } = filter;
      expect(check(rest, schema, "")).toEqual([]);
    }
  });
});
