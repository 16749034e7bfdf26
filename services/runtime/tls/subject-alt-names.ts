/**
 * The subject alternative names of a certificate, read from Node's
 * `X509Certificate.subjectAltName` text: entries `TYPE:value` joined by
 * `", "`, where a value that holds a comma, a quote or anything unusual is
 * written as a JSON string (`URI:"spiffe://a/b\u002c DNS:x"`, Node since
 * 17.3). Reading the quoted form as one value is what keeps a certificate
 * from smuggling a second name inside one: a naive split on `", "` would.
 * Pure.
 */

/** One subject alternative name: its type as Node names it (`URI`, `DNS`, `IP Address`, …) and value. */
export interface SubjectAltName {
  readonly type: string;
  readonly value: string;
}

/** Reads a JSON string starting at `text[start]` (a `"`); returns it and the index after it, or undefined. */
function readQuoted(text: string, start: number): { value: string; end: number } | undefined {
  let index = start + 1;
  while (index < text.length) {
    const char = text[index];
    if (char === "\\") index += 2;
    else if (char === '"') {
      try {
        return { value: JSON.parse(text.slice(start, index + 1)) as string, end: index + 1 };
      } catch {
        return undefined;
      }
    } else index += 1;
  }
  return undefined;
}

/**
 * Parses Node's `subjectAltName` text (undefined: no extension) into its
 * entries, in order. Throws an Error when the text cannot be read (an
 * unterminated quoted value), which the verifier treats as a bad
 * certificate rather than guessing.
 */
export function parseSubjectAltNames(text: string | undefined): SubjectAltName[] {
  if (text === undefined || text === "") return [];
  const names: SubjectAltName[] = [];
  let index = 0;
  while (index < text.length) {
    const colon = text.indexOf(":", index);
    if (colon === -1) throw new Error(`unreadable subjectAltName entry at ${index}`);
    const type = text.slice(index, colon);
    let value: string;
    if (text[colon + 1] === '"') {
      const quoted = readQuoted(text, colon + 1);
      if (quoted === undefined) throw new Error(`unterminated quoted ${type} name`);
      value = quoted.value;
      index = quoted.end;
      if (index < text.length && !text.startsWith(", ", index)) {
        throw new Error(`unexpected text after a quoted ${type} name`);
      }
    } else {
      const comma = text.indexOf(", ", colon + 1);
      const end = comma === -1 ? text.length : comma;
      value = text.slice(colon + 1, end);
      index = end;
    }
    names.push({ type, value });
    if (index < text.length) index += 2;
  }
  return names;
}
