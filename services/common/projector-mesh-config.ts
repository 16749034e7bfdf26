/**
 * MeshConfig on the projection: an origin's mesh-wide defaults travel as one
 * extra projection of the origin, keyed `@mesh` (a name no Service can have),
 * carrying only `mesh_config`. Only the MeshConfig named `default` applies:
 * one mesh-wide record per origin, as Istio has one MeshConfig per mesh, so
 * that no two objects of one cluster can disagree on a default. Any other
 * name is rejected. Pure and deterministic, no I/O.
 */
import { create } from "@bufbuild/protobuf";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "./kube-object.js";
import type { PolicyProblem } from "./projector-backend-tls.js";
import { field, isJsonObject, problemOfError, quote } from "./projector-fields.js";
import { MESH_CONFIG, type ObjectIndex } from "./projector-index.js";
import { MESH_CONFIG_NAME, readMeshConfig } from "./projector-mesh-config-read.js";
import { MESH_RECORD } from "./service-name.js";

/** What {@link projectMeshConfig} gives. */
export interface MeshConfigProjection {
  /** The mesh record (`@mesh`), when the MeshConfig named `default` is valid. */
  readonly projection: ServiceConfigProjection | undefined;
  /**
   * MeshConfigs left out (namespace `""`): the `default` one's problems name
   * the service `@mesh`, any other's none.
   */
  readonly rejections: PolicyProblem[];
}

/**
 * Projects the MeshConfigs of `index`: the mesh record from the one named
 * `default`, with `version` and `originCluster` empty (the exporter stamps
 * them). Rejections: `invalid_object` (a MeshConfig with a namespace, since
 * the kind is cluster-scoped, or without a name), `duplicate_object`,
 * `invalid_value` (any name but `default`) and whatever `readMeshConfig`
 * throws. Never throws.
 */
export function projectMeshConfig(index: ObjectIndex): MeshConfigProjection {
  const rejections: PolicyProblem[] = [];
  for (const object of index.unidentified(MESH_CONFIG)) {
    rejections.push({ ...unidentified(object), namespace: "", name: nameOf(object), services: [] });
  }
  let projection: ServiceConfigProjection | undefined;
  for (const object of index.list(MESH_CONFIG)) {
    const name = nameOf(object);
    const services = name === MESH_CONFIG_NAME ? [MESH_RECORD] : [];
    const reject = (reason: string, message: string) =>
      rejections.push({ namespace: "", name, reason, message, services });
    if (index.isAmbiguous(MESH_CONFIG, "", name)) {
      reject(
        "duplicate_object",
        `the snapshot holds several different MeshConfig objects named ${name}`,
      );
    } else if (name !== MESH_CONFIG_NAME) {
      reject(
        "invalid_value",
        `metadata.name ${quote(name)} is not "${MESH_CONFIG_NAME}": an origin has one mesh-wide MeshConfig (as Istio has one MeshConfig per mesh), the one named "${MESH_CONFIG_NAME}"`,
      );
    } else {
      try {
        const meshConfig = readMeshConfig(object);
        projection = create(ServiceConfigProjectionSchema, { service: MESH_RECORD, meshConfig });
      } catch (error) {
        const { reason, message } = problemOfError(error);
        reject(reason, message);
      }
    }
  }
  return { projection, rejections };
}

/** Why an unidentified MeshConfig has no usable identity. */
function unidentified(object: KubeObject): { reason: string; message: string } {
  const metadata: unknown = object.metadata;
  const namespace = isJsonObject(metadata) ? field(metadata, "namespace") : undefined;
  const message =
    namespace !== undefined && namespace !== ""
      ? "a MeshConfig is cluster-scoped: it must have no metadata.namespace"
      : "the object has no usable metadata.name";
  return { reason: "invalid_object", message };
}

/** The object's `metadata.name`, or `""` when it has none. */
function nameOf(object: KubeObject): string {
  const metadata: unknown = object.metadata;
  const name = isJsonObject(metadata) ? field(metadata, "name") : undefined;
  return typeof name === "string" ? name : "";
}
