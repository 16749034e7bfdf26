/**
 * What becomes of an HTTP/2 request that was answered before its body
 * ended (refused, or failed by its deadline or the body budget): the rest
 * of its body is read and dropped, so a client that is still sending can
 * end it and the stream closes by itself; a stream still open a moment
 * later is reset (RST_STREAM CANCEL), so a client that never ends its
 * request holds nothing.
 *
 * RFC 9113 (section 8.1) suggests NO_ERROR for such a reset, but Node 20
 * sent no NO_ERROR reset of a stream whose request was still open in our
 * tests (the client never learned the stream was over), and was seen
 * spinning in `SendPendingData` submitting one. The grace also keeps the
 * reset from reaching a client before the answer it follows: grpc-js
 * reports CANCELLED instead of a trailers-only status that a reset follows
 * closely.
 */
import type { IncomingMessage } from "node:http";
import { type Http2ServerRequest, constants as http2 } from "node:http2";

/** How long a client answered before its request ended may take to end it. */
export const RESET_GRACE_MS = 1_000;

/**
 * Resets `req`'s HTTP/2 stream {@link RESET_GRACE_MS} from now unless it has
 * closed by then. Does nothing for HTTP/1.1 (Node discards the rest of the
 * body, and closes the connection at its `requestTimeout`).
 */
export function resetUnlessEnded(req: IncomingMessage | Http2ServerRequest): void {
  if (!("stream" in req)) return;
  const { stream } = req;
  if (stream.closed || stream.destroyed) return;
  const timer = setTimeout(() => {
    if (!stream.closed && !stream.destroyed) stream.close(http2.NGHTTP2_CANCEL);
  }, RESET_GRACE_MS);
  timer.unref();
  stream.once("close", () => clearTimeout(timer));
}
