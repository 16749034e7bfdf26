/**
 * One piece of a process's TLS material (its identity, or one trust
 * domain's bundle) across re-reads of its files: content equal to what was
 * taken changes nothing; new content that parses is taken; new content that
 * does not is refused once and stays refused, silently, until the content
 * changes again. Pure.
 */
import { createHash } from "node:crypto";

/** One file as read: its text, or why it could not be read. */
export type FileRead =
  | { readonly path: string; readonly text: string; readonly error?: undefined }
  | { readonly path: string; readonly text?: undefined; readonly error: string };

/** Every reason a re-read is not taken, as metric labels. */
export const MATERIAL_REJECTION_REASONS = [
  "unreadable",
  "certificate_invalid",
  "key_invalid",
  "key_mismatch",
  "bundle_invalid",
] as const;

/** A re-read piece that was not taken: which, why (a label) and a sentence naming the files. */
export interface MaterialRejection {
  /** `identity`, or `bundle <trust domain>`. */
  readonly piece: string;
  readonly reason: (typeof MATERIAL_REJECTION_REASONS)[number];
  readonly message: string;
}

/** What a piece last took, and the content last refused. */
export interface PieceState<T> {
  readonly digest?: string;
  readonly value?: T;
  readonly refused?: string;
}

/** The digest of a piece's files (paths, errors and contents). */
function digestOf(files: readonly FileRead[]): string {
  const hash = createHash("sha256");
  for (const file of files) hash.update(`${file.path}\0${file.error ?? ""}\0${file.text ?? ""}\0`);
  return hash.digest("hex");
}

/** A piece's parse: its value, or why it is refused. */
export type PieceParse<T> =
  | { readonly value: T }
  | { readonly refusal: Omit<MaterialRejection, "piece"> };

/** Decides one piece: unchanged, taken, or refused (reported once per content). */
export function decidePiece<T>(
  state: PieceState<T>,
  files: readonly FileRead[],
  parse: () => PieceParse<T>,
  piece: string,
  rejections: MaterialRejection[],
): PieceState<T> {
  const digest = digestOf(files);
  if (digest === state.digest || digest === state.refused) return state;
  const unreadable = files.find((file) => file.error !== undefined);
  const parsed: PieceParse<T> =
    unreadable === undefined
      ? parse()
      : { refusal: { reason: "unreadable", message: `${unreadable.path}: ${unreadable.error}` } };
  if ("refusal" in parsed) {
    rejections.push({ piece, ...parsed.refusal });
    return { ...state, refused: digest };
  }
  return { digest, value: parsed.value };
}
