/**
 * The fleet benchmark's burst, planned ahead (pure): the manifest file
 * writes of C route edits in order, each file's text built beforehand so
 * the burst itself only writes and renames, and, per edited service, its
 * final edit number, the write that carries it and the agents interested.
 * Also {@link editMarker}, which reads a stored projection's edit number.
 */
import {
  namespaceManifest,
  type ScenarioChange,
  SERVICES_PER_NAMESPACE,
  serviceIndex,
} from "../scenario.js";

/** One manifest file write of the burst. */
export interface BurstWrite {
  readonly file: string;
  readonly text: string;
}

/** An edited service: the edit number of its last edit, and which write made it. */
export interface BurstFinal extends Pick<ScenarioChange, "service" | "interested"> {
  readonly edit: number;
  /** The index in {@link BurstPlan.writes} of the write that carries `edit`. */
  readonly write: number;
}

/** The planned burst. */
export interface BurstPlan {
  readonly writes: readonly BurstWrite[];
  /** One per distinct edited service, in order of first edit. */
  readonly finals: readonly BurstFinal[];
}

/**
 * Plans `changes` on a mesh of `services`: edit i (0-based) sets its
 * service's route to edit number i + 1 and rewrites that service's
 * namespace file (with every earlier edit of the namespace kept).
 */
export function planBurst(services: number, changes: readonly ScenarioChange[]): BurstPlan {
  const edits = new Map<number, number>();
  const writes: BurstWrite[] = [];
  const finals = new Map<string, BurstFinal>();
  for (const [i, change] of changes.entries()) {
    const index = serviceIndex(change.service);
    edits.set(index, i + 1);
    const ns = Math.floor(index / SERVICES_PER_NAMESPACE);
    const [file, text] = namespaceManifest(services, ns, edits);
    writes.push({ file, text });
    finals.set(change.service, {
      service: change.service,
      edit: i + 1,
      write: i,
      interested: change.interested,
    });
  }
  return { writes, finals: [...finals.values()] };
}

const MARKER = Buffer.from("x-config-edit");

/**
 * The edit number a stored projection of the bench's mesh carries (the
 * `x-config-edit` response header value of its route, see
 * `routeObject`): the first run of digits within a few bytes after the
 * header's name in the encoded value; undefined when there is none.
 */
export function editMarker(value: Uint8Array): number | undefined {
  const bytes = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  const at = bytes.indexOf(MARKER);
  if (at === -1) return undefined;
  let i = at + MARKER.length;
  const skipEnd = Math.min(bytes.length, i + 4);
  while (i < skipEnd && (bytes[i] as number) < 0x20) i++;
  if (i === at + MARKER.length) return undefined;
  let digits = "";
  while (i < bytes.length && (bytes[i] as number) >= 0x30 && (bytes[i] as number) <= 0x39) {
    digits += String.fromCharCode(bytes[i] as number);
    i++;
  }
  return digits === "" ? undefined : Number(digits);
}
