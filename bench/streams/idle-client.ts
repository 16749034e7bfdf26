/**
 * Bench-only entry (`npm run bench -- --idle-streams`): the client side,
 * in its own process so the registrar's heap holds only the registrar. On
 * its parent's commands (idle-protocol.ts) it opens one HTTP/2 connection
 * per stream, as agents do, then one WatchConfig stream on each, speaking
 * the Connect protocol as the agents' connect-es client does, reads every
 * byte and leaves the streams idle once each received SYNCED.
 *
 * A stream's path is chosen by its request headers alone: a plain request
 * goes to the WatchConfig lane; one naming a request compression
 * (`connect-content-encoding: gzip`, the message itself left uncompressed)
 * is left by the lane to connect-es.
 */
import { type ClientHttp2Session, type ClientHttp2Stream, connect } from "node:http2";
import { gunzipSync } from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  WatchConfigRequestSchema,
  WatchConfigResponseSchema,
  WatchEventType,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import { WATCH_CONFIG_PATH } from "../../services/registrar/service/watch-lane-protocol.js";
import { preciseNow } from "../worker-protocol.js";
import type { IdleClientCommand, IdleClientDone, StreamPath } from "./idle-protocol.js";

/** Connections or streams being opened at once. */
const OPENING_AT_ONCE = 64;

const sessions: ClientHttp2Session[] = [];
const streams: ClientHttp2Stream[] = [];
let bytes = 0;
let failures = 0;
let firstFailure: string | undefined;

function fail(what: string): void {
  failures++;
  firstFailure ??= what;
}

/** Runs `open(i)` for i in [0, count), at most {@link OPENING_AT_ONCE} at a time. */
async function inBatches(count: number, open: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < count) await open(next++);
  };
  await Promise.all(Array.from({ length: Math.min(OPENING_AT_ONCE, count) }, lane));
}

function openSession(url: string): Promise<void> {
  return new Promise((resolve) => {
    const session = connect(url);
    sessions.push(session);
    session.on("error", (error) => fail(`connection: ${error.message}`));
    session.once("remoteSettings", () => resolve());
    session.once("close", () => resolve());
  });
}

/** The envelope (flags 0: uncompressed) of a request watching `services`. */
function requestBody(services: readonly string[]): Buffer {
  const message = toBinary(
    WatchConfigRequestSchema,
    create(WatchConfigRequestSchema, { services: [...services] }),
  );
  const body = Buffer.alloc(5 + message.length);
  body.writeUInt32BE(message.length, 1);
  body.set(message, 5);
  return body;
}

/** Opens a stream on `session`; resolves once it received SYNCED or ended. */
function watch(session: ClientHttp2Session, path: StreamPath, services: readonly string[]) {
  return new Promise<void>((resolve) => {
    if (session.closed || session.destroyed) {
      fail("the connection closed before its stream");
      resolve();
      return;
    }
    const stream = session.request({
      ":method": "POST",
      ":path": WATCH_CONFIG_PATH,
      "content-type": "application/connect+proto",
      "connect-protocol-version": "1",
      "connect-accept-encoding": "gzip",
      ...(path === "connect-es" ? { "connect-content-encoding": "gzip" } : {}),
    });
    streams.push(stream);
    let pending: Buffer = Buffer.alloc(0);
    stream.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      while (pending.length >= 5 && pending.length >= 5 + pending.readUInt32BE(1)) {
        const flags = pending[0] as number;
        const end = 5 + pending.readUInt32BE(1);
        const payload = pending.subarray(5, end);
        pending = pending.subarray(end);
        if ((flags & 2) === 2) {
          fail(`the stream ended: ${payload.toString()}`);
          resolve();
          continue;
        }
        const message = (flags & 1) === 1 ? gunzipSync(payload) : payload;
        const event = fromBinary(WatchConfigResponseSchema, message);
        if (event.type === WatchEventType.SYNCED) resolve();
      }
    });
    stream.on("error", (error) => fail(`stream: ${error.message}`));
    stream.once("close", () => resolve());
    stream.end(requestBody(services));
  });
}

async function run(command: IdleClientCommand): Promise<void> {
  const started = preciseNow();
  if (command.type === "connect") {
    await inBatches(command.count, () => openSession(command.url));
  } else if (command.type === "watch") {
    const { deps, path } = command;
    await inBatches(deps.length, (i) =>
      watch(sessions[i] as ClientHttp2Session, path, deps[i] ?? []),
    );
  } else {
    for (const stream of streams.splice(0)) stream.close();
    await Promise.all(
      sessions.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))),
    );
  }
  const done: IdleClientDone = {
    type: "done",
    ms: Math.round(preciseNow() - started),
    failures,
    bytes,
    ...(firstFailure === undefined ? {} : { firstFailure }),
  };
  ({ bytes, failures, firstFailure } = { bytes: 0, failures: 0, firstFailure: undefined });
  process.send?.(done);
}

process.on("message", (command: IdleClientCommand) => void run(command));
