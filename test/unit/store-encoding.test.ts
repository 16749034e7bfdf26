/**
 * How a store encodes what it writes: a projection's value derived from its
 * content bytes (`stampContent`) is byte for byte the encoding of the stamped
 * message, and a write batch that carries content bytes stores the same
 * value as one that does not.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { projectionContent } from "../../services/common/projection-content.js";
import { projectServices } from "../../services/common/projector.js";
import {
  encodeProjection,
  stampContent,
  unstampValue,
} from "../../services/registrar/store/decode-entry.js";
import { createMemoryStore } from "../../services/registrar/store/memory-store.js";
import { readManifestObjects } from "../support/memory-source.js";
import { makeProjection, versionAt } from "../support/projections.js";

/** Projections of every shape at hand: the fixtures', and long or non-ASCII names. */
async function samples(): Promise<ServiceConfigProjection[]> {
  const long = "x".repeat(200);
  const longer = "y".repeat(20_000);
  return [
    ...projectServices(await readManifestObjects()).projections,
    makeProjection("shop/web"),
    makeProjection(`shop/${long.slice(0, 63)}`, { backend: `shop/${long.slice(0, 60)}` }),
    create(ServiceConfigProjectionSchema, { service: "shop/empty" }),
    create(ServiceConfigProjectionSchema, {
      service: "shop/big",
      routes: [{ name: longer, namespace: "shop", hostnames: ["é.example", "例え.jp"] }],
    }),
  ];
}

describe("stampContent", () => {
  it("gives the encoding of the stamped projection, for any origin and version", async () => {
    for (const projection of await samples()) {
      const content = projectionContent(projection);
      for (const [origin, version] of [
        ["hub", versionAt(1)],
        ["", ""],
        ["east", ""],
        ["a-very-long-origin-name-".repeat(8), "2026-11-30T01:07:59.651000001Z"],
      ] as const) {
        const expected = encodeProjection({ ...projection, version }, origin);
        expect(stampContent(content, origin, version), projection.service).toEqual(expected);
      }
    }
  });

  it("is undone by unstampValue: a stored value without origin and version is the content", async () => {
    for (const projection of await samples()) {
      const stored = encodeProjection({ ...projection, version: versionAt(3) }, "hub");
      expect(unstampValue(stored), projection.service).toEqual(projectionContent(projection));
    }
    expect(unstampValue(new Uint8Array([0x0a, 0x05, 0x61]))).toBeUndefined();
    expect(unstampValue(new Uint8Array([0x0f]))).toBeUndefined();
    expect(unstampValue(new Uint8Array([]))).toEqual(new Uint8Array([]));
  });

  it("declines content that does not start with the service field", () => {
    const noService = toBinary(
      ServiceConfigProjectionSchema,
      create(ServiceConfigProjectionSchema),
    );
    expect(stampContent(noService, "hub", versionAt(1))).toBeUndefined();
    expect(stampContent(new Uint8Array([0x0a, 0x05, 0x61]), "hub", versionAt(1))).toBeUndefined();
  });

  it("makes a write with content bytes store what a write without them stores", async () => {
    const store = createMemoryStore({ origin: "hub" });
    const other = createMemoryStore({ origin: "hub", prefix: "/other" });
    const projections = (await samples())
      .slice(0, 4)
      .map((p, i) => ({ ...p, version: versionAt(i) }));
    await store.write(
      projections.map((projection) => ({
        type: "put",
        projection,
        content: projectionContent(projection),
      })),
    );
    await other.write(projections.map((projection) => ({ type: "put", projection })));
    // The raw bytes each backend holds, in write order.
    const values = (s: typeof store) =>
      s.backend.changesAfter(0).map((change) => (change.type === "put" ? change.value : undefined));
    expect(values(store)).toHaveLength(4);
    expect(values(store)).toEqual(values(other));
  });
});
