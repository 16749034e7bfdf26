/**
 * A raw HTTP/2 client over a plain TCP socket, for tests that must behave
 * the way no well-behaved client library does: ignore the server's SETTINGS,
 * leave a header block unfinished, never answer a PING, never read. Frames
 * are written by hand (RFC 9113) with HPACK literals (RFC 7541, no Huffman,
 * no indexing), and the server's frames are parsed as they arrive.
 */
import { connect, type Socket } from "node:net";

/** The HTTP/2 connection preface. */
export const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/** Frame types used here. */
export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

/** Frame flags used here. */
export const Flag = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4 } as const;

/** SETTINGS identifiers (RFC 9113 section 6.5.2). */
export const Setting = { MAX_CONCURRENT_STREAMS: 0x3, INITIAL_WINDOW_SIZE: 0x4 } as const;

/** A frame the server sent. */
export interface Frame {
  readonly type: number;
  readonly flags: number;
  readonly streamId: number;
  readonly payload: Buffer;
}

/** Encodes one frame. */
export function encodeFrame(
  type: number,
  flags: number,
  streamId: number,
  payload: Buffer,
): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header.writeUInt8(type, 3);
  header.writeUInt8(flags, 4);
  header.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([header, payload]);
}

/** A SETTINGS frame with the given identifier/value pairs. */
export function settingsFrame(entries: readonly [number, number][] = []): Buffer {
  const payload = Buffer.alloc(6 * entries.length);
  entries.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, 6 * i);
    payload.writeUInt32BE(value, 6 * i + 2);
  });
  return encodeFrame(FrameType.SETTINGS, 0, 0, payload);
}

/** An HPACK integer with an `prefixBits`-bit prefix (RFC 7541 section 5.1). */
function hpackInteger(value: number, prefixBits: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [value];
  const bytes = [max];
  let rest = value - max;
  while (rest >= 128) {
    bytes.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return bytes;
}

function hpackString(text: string): Buffer {
  const bytes = Buffer.from(text, "latin1");
  return Buffer.concat([Buffer.from(hpackInteger(bytes.length, 7)), bytes]);
}

/** A header block of literal fields without indexing, new names. */
export function headerBlock(headers: readonly [string, string][]): Buffer {
  return Buffer.concat(
    headers.flatMap(([name, value]) => [
      Buffer.from([0x00]),
      hpackString(name),
      hpackString(value),
    ]),
  );
}

/** The request headers of a gRPC call to `path` (a POST with `content-type: application/grpc`). */
export function grpcRequestHeaders(path: string): [string, string][] {
  return [
    [":method", "POST"],
    [":scheme", "http"],
    [":path", path],
    [":authority", "localhost"],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
  ];
}

/** A gRPC length-prefixed message (uncompressed). */
export function grpcEnvelope(message: Uint8Array, declaredLength = message.length): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(declaredLength, 1);
  return Buffer.concat([header, Buffer.from(message)]);
}

/** Splits complete frames off the front of `buffer`. */
export function parseFrames(buffer: Buffer): { frames: Frame[]; rest: Buffer } {
  const frames: Frame[] = [];
  let offset = 0;
  while (offset + 9 <= buffer.length) {
    const length = buffer.readUIntBE(offset, 3);
    if (offset + 9 + length > buffer.length) break;
    frames.push({
      type: buffer.readUInt8(offset + 3),
      flags: buffer.readUInt8(offset + 4),
      streamId: buffer.readUInt32BE(offset + 5) & 0x7fffffff,
      payload: buffer.subarray(offset + 9, offset + 9 + length),
    });
    offset += 9 + length;
  }
  return { frames, rest: buffer.subarray(offset) };
}

/** A raw HTTP/2 connection; see the module comment. */
export interface RawH2Connection {
  readonly socket: Socket;
  /** Every frame the server sent so far. */
  readonly frames: Frame[];
  /** Whether the server closed the connection. */
  readonly closed: boolean;
  /** Resolves when the connection is closed (by either side). */
  readonly closedPromise: Promise<void>;
  /** Writes bytes as they are. */
  write(bytes: Buffer): void;
  /** Resolves with the first frame (sent so far or later) that matches; rejects on close or timeout. */
  waitForFrame(match: (frame: Frame) => boolean, timeoutMs?: number): Promise<Frame>;
  /** Destroys the socket. */
  destroy(): void;
}

/**
 * Connects to `port` on 127.0.0.1 and sends the preface and an empty
 * SETTINGS frame (unless `handshake` is false). The server's SETTINGS are
 * acknowledged only when `ackSettings` is true (the default); PINGs are
 * never answered.
 */
export async function openRawH2(
  port: number,
  options: { handshake?: boolean; ackSettings?: boolean } = {},
): Promise<RawH2Connection> {
  const socket = connect({ host: "127.0.0.1", port });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  const frames: Frame[] = [];
  const waiters = new Set<() => void>();
  let pending: Buffer = Buffer.alloc(0);
  let closed = false;
  const closedPromise = new Promise<void>((resolve) =>
    socket.once("close", () => {
      closed = true;
      resolve();
      for (const wake of waiters) wake();
    }),
  );
  socket.on("error", () => {});
  socket.on("data", (chunk: Buffer) => {
    const parsed = parseFrames(Buffer.concat([pending, chunk]));
    pending = parsed.rest;
    for (const frame of parsed.frames) {
      frames.push(frame);
      const isSettings = frame.type === FrameType.SETTINGS && (frame.flags & Flag.ACK) === 0;
      if (isSettings && (options.ackSettings ?? true) && !socket.destroyed) {
        socket.write(encodeFrame(FrameType.SETTINGS, Flag.ACK, 0, Buffer.alloc(0)));
      }
    }
    for (const wake of waiters) wake();
  });
  if (options.handshake ?? true) socket.write(Buffer.concat([PREFACE, settingsFrame()]));
  return {
    socket,
    frames,
    get closed() {
      return closed;
    },
    closedPromise,
    write: (bytes) => {
      socket.write(bytes);
    },
    waitForFrame(match, timeoutMs = 5_000) {
      return new Promise<Frame>((resolve, reject) => {
        const check = () => {
          const found = frames.find(match);
          if (found !== undefined) {
            done();
            resolve(found);
          } else if (closed) {
            done();
            reject(new Error("the connection closed before the expected frame"));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no matching frame within ${timeoutMs} ms`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    destroy: () => socket.destroy(),
  };
}
