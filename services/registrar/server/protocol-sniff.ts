/**
 * Which protocol a new plaintext connection speaks, from its first bytes:
 * HTTP/2 with prior knowledge starts with the connection preface, anything
 * else is HTTP/1.1. The bytes read are put back, so the chosen server sees
 * the connection from its start.
 */
import type { Socket } from "node:net";

/** The first bytes an HTTP/2 client sends (RFC 9113, section 3.4). */
const HTTP2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/** The protocol a connection speaks: HTTP/1.1, or HTTP/2 with prior knowledge. */
export type Protocol = "http/1.1" | "h2c";

/**
 * Reads a new connection's first bytes until they either diverge from the
 * HTTP/2 preface (HTTP/1.1) or contain all of it (h2c), then pauses the socket,
 * puts the bytes back and reports the protocol. Reports undefined (and
 * destroys the socket) when the peer goes away, errs or stays silent for
 * `timeoutMs` first.
 */
export function sniffProtocol(
  socket: Socket,
  timeoutMs: number,
  done: (protocol: Protocol | undefined) => void,
): void {
  const chunks: Buffer[] = [];
  let length = 0;
  const finish = (protocol: Protocol | undefined) => {
    clearTimeout(timer);
    socket.off("data", onData);
    socket.off("end", onGone);
    socket.off("error", onGone);
    socket.off("close", onGone);
    if (protocol === undefined) {
      socket.destroy();
    } else {
      socket.pause();
      socket.unshift(Buffer.concat(chunks, length));
    }
    done(protocol);
  };
  const onData = (chunk: Buffer) => {
    chunks.push(chunk);
    length += chunk.length;
    const head = chunks.length === 1 ? chunk : Buffer.concat(chunks, length);
    const n = Math.min(head.length, HTTP2_PREFACE.length);
    if (head.compare(HTTP2_PREFACE, 0, n, 0, n) !== 0) finish("http/1.1");
    else if (n === HTTP2_PREFACE.length) finish("h2c");
  };
  const onGone = () => finish(undefined);
  const timer = setTimeout(onGone, timeoutMs);
  timer.unref();
  socket.on("data", onData);
  socket.on("end", onGone);
  socket.on("error", onGone);
  socket.on("close", onGone);
}
