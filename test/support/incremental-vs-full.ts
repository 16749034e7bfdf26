/**
 * The incremental projector checked against full projections: random edits
 * from a seeded source, and after each one the projections held from the
 * incremental updates, its rejections and its warnings equal to a full
 * projection of the same snapshot, byte for byte. For the projector tests
 * of each kind the projection carries.
 */
import { type JsonValue, toBinary, toJson } from "@bufbuild/protobuf";
import { expect } from "vitest";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { mulberry32 } from "../../services/common/mulberry32.js";
import { type ProjectorOptions, projectServices } from "../../services/common/projector.js";
import { createIncrementalProjector } from "../../services/common/projector-incremental.js";

/**
 * Runs `seeds` × `steps` random edits (`edit` must return a new array and
 * never modify an object) from `initial` with the given options, asserting
 * equality with a full projection after each; returns how many updates were
 * incremental, so a caller can check the fast path was taken. `observe`
 * sees every projection an incremental or full update gives.
 */
export function checkIncrementalAgainstFull(
  options: ProjectorOptions,
  initial: readonly KubeObject[],
  edit: (next: () => number, objects: readonly KubeObject[]) => KubeObject[],
  observe: (projection: ServiceConfigProjection) => void = () => {},
  seeds = 10,
  steps = 40,
): number {
  let incremental = 0;
  for (let seed = 1; seed <= seeds; seed++) {
    const next = mulberry32(seed);
    let objects: KubeObject[] = [...initial];
    const projector = createIncrementalProjector(options);
    const held = new Map<string, Uint8Array>();
    for (let step = 0; step < steps; step++) {
      const update = projector.update(objects);
      if (update.full) held.clear();
      else incremental++;
      for (const service of update.removed) held.delete(service);
      for (const p of update.projections) {
        held.set(p.service, toBinary(ServiceConfigProjectionSchema, p));
        observe(p);
      }
      const full = projectServices(objects, options);
      const context = `seed ${seed}, step ${step}`;
      expect(held, context).toEqual(
        new Map(
          full.projections.map((p) => [p.service, toBinary(ServiceConfigProjectionSchema, p)]),
        ),
      );
      expect(update.rejections, context).toEqual(full.rejections);
      expect(update.warnings, context).toEqual(full.warnings);
      objects = edit(next, objects);
    }
  }
  return incremental;
}

/** What {@link objectEditor} gives: a copy of a snapshot and ways to change it. */
export interface ObjectEditor {
  /** The copy being edited (the snapshot passed in is never changed). */
  readonly copy: KubeObject[];
  /** One item of `list`, chosen by the seeded source. */
  pick<T>(list: readonly T[]): T;
  /** Replaces the first object of `kind` named `name` (or appends it); removes it for undefined. */
  replace(kind: string, name: string, object: KubeObject | undefined): void;
}

/** An editor over a copy of `objects`, for the random edits of {@link checkIncrementalAgainstFull}. */
export function objectEditor(next: () => number, objects: readonly KubeObject[]): ObjectEditor {
  const copy = [...objects];
  return {
    copy,
    pick: <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T,
    replace(kind, name, object) {
      const at = copy.findIndex((o) => o.kind === kind && o.metadata?.name === name);
      if (object === undefined) {
        if (at >= 0) copy.splice(at, 1);
      } else if (at >= 0) copy[at] = object;
      else copy.push(object);
    },
  };
}

/**
 * One repeated field of service `key`'s projection of `objects`, as proto
 * JSON (for example `virtualHosts`); `[]` when the service has no projection
 * or the field is empty.
 */
export function projectedField(
  objects: readonly KubeObject[],
  key: string,
  field: string,
  options: ProjectorOptions = {},
): JsonValue[] {
  const projection = projectServices(objects, options).projections.find((p) => p.service === key);
  if (projection === undefined) return [];
  const json = toJson(ServiceConfigProjectionSchema, projection) as Record<string, JsonValue[]>;
  return json[field] ?? [];
}
