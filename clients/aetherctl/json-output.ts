/**
 * JSON text for aetherctl's `-o json` output of values that are not one proto
 * message (the evaluator's Decision): 64-bit integers as strings, embedded
 * protobuf messages in their canonical proto JSON form, and absent fields as
 * `null` so that every object has the same keys. Pure.
 */
import { createRegistry, type Message, toJson } from "@bufbuild/protobuf";
import { file_aether_registry_v1_config_service } from "../../gen/aether/registry/v1/config_service_pb.js";
import { file_aether_registry_v1_projection } from "../../gen/aether/registry/v1/projection_pb.js";

const registry = createRegistry(
  file_aether_registry_v1_projection,
  file_aether_registry_v1_config_service,
);

function isMessage(value: unknown): value is Message {
  return typeof value === "object" && value !== null && "$typeName" in value;
}

function replacer(_key: string, value: unknown): unknown {
  if (value === undefined) return null;
  if (typeof value === "bigint") return value.toString();
  if (isMessage(value)) {
    const schema = registry.getMessage(value.$typeName);
    if (schema !== undefined) return toJson(schema, value);
  }
  return value;
}

/**
 * Serializes `value` as indented JSON (two spaces) with a final `\n`. bigint
 * values become decimal strings (as proto JSON writes int64), messages of
 * the aether.registry.v1 package become proto JSON, and `undefined` becomes
 * `null`.
 */
export function toJsonText(value: unknown): string {
  return `${JSON.stringify(value, replacer, 2)}\n`;
}
