/**
 * Sending messages the registrar already holds encoded without decoding and
 * encoding them again. The store holds every projection as its protobuf
 * binary encoding; a response that carries thousands of them would otherwise
 * spend most of its time decoding them into messages only for the codec to
 * encode them back into the same bytes.
 *
 * A protobuf message field is, on the wire, a length-delimited record with
 * the field's number; the binary writer emits a message's unknown fields as
 * they are. So a response carrying the encoded projections as unknown fields
 * of the projection field's number is, byte for byte, a response carrying the
 * projections, and any client decodes it as one. That holds for the binary
 * codec only: the JSON codec drops unknown fields, so a JSON request gets
 * decoded messages.
 */
import type { DescField, Message } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import type { HandlerContext } from "@connectrpc/connect";

/** The content types of the protobuf binary codec, per protocol (Connect, gRPC, gRPC-Web). */
const BINARY_CONTENT_TYPES = new Set([
  "application/proto",
  "application/connect+proto",
  "application/grpc",
  "application/grpc+proto",
  "application/grpc-web",
  "application/grpc-web+proto",
]);

/**
 * Reports whether a request's response is encoded with the protobuf binary
 * codec: its content type says so, or, for a Connect GET, its `encoding`
 * query parameter. Anything else (JSON, an unknown codec) is false.
 */
export function usesBinaryCodec(
  context: Pick<HandlerContext, "requestMethod" | "requestHeader" | "url">,
): boolean {
  if (context.requestMethod === "GET") {
    try {
      return new URL(context.url, "http://localhost").searchParams.get("encoding") === "proto";
    } catch {
      return false;
    }
  }
  const contentType = context.requestHeader.get("content-type") ?? "";
  const mediaType = (contentType.split(";")[0] ?? "").trim().toLowerCase();
  return BINARY_CONTENT_TYPES.has(mediaType);
}

/**
 * Sets `message`'s unknown fields to `encoded` (binary encodings of messages
 * of the type of `field`), as occurrences of `field`: encoded with the
 * binary codec, `message` then carries them as if they were set on `field`
 * (appended to it, for a repeated field). Returns `message`. Only for
 * responses encoded with the binary codec (see {@link usesBinaryCodec}).
 */
export function withEncodedMessages<T extends Message>(
  message: T,
  field: DescField,
  encoded: readonly Uint8Array[],
): T {
  // An unknown field's data is what follows its tag on the wire: for a
  // length-delimited field, the length, then the bytes.
  message.$unknown = encoded.map((bytes) => ({
    no: field.number,
    wireType: WireType.LengthDelimited,
    data: lengthDelimited(bytes),
  }));
  return message;
}

/** Returns `bytes` preceded by their length as a varint. */
function lengthDelimited(bytes: Uint8Array): Uint8Array {
  let prefix = 1;
  for (let n = bytes.length; n >= 0x80; n >>>= 7) prefix++;
  const out = new Uint8Array(prefix + bytes.length);
  let at = 0;
  let n = bytes.length;
  while (n >= 0x80) {
    out[at++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  out[at++] = n;
  out.set(bytes, at);
  return out;
}
