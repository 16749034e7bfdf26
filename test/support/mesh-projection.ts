/** A builder of small, valid mesh records (`@mesh` projections) for tests. */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  type MeshConfigSchema,
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { MESH_RECORD } from "../../services/common/service-name.js";
import { versionAt } from "./projections.js";

/**
 * The mesh record of `origin` (default none) at `version` (default
 * `versionAt(1)`) carrying `meshConfig` (default: named `default`, a 15s
 * request timeout) and nothing else.
 */
export function meshProjection(
  options: {
    version?: string;
    origin?: string;
    meshConfig?: MessageInitShape<typeof MeshConfigSchema>;
  } = {},
): ServiceConfigProjection {
  return create(ServiceConfigProjectionSchema, {
    service: MESH_RECORD,
    originCluster: options.origin ?? "",
    version: options.version ?? versionAt(1),
    meshConfig: options.meshConfig ?? { name: "default", requestTimeout: { seconds: 15n } },
  });
}
