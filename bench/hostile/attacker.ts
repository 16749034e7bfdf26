/**
 * One attacker process of `npm run bench -- --hostile`: it receives a
 * {@link AttackCommand} over IPC, attacks the registrar's API port until
 * told to stop, then reports {@link AttackStats} and exits. Attackers run
 * in processes of their own so that each has its own file descriptors
 * (20,000 idle connections do not fit in one process's limit here) and so
 * that the coordinator's probes are not delayed by the attack's own work.
 *
 * - `streams`: raw HTTP/2 connections (test/support/raw-h2.ts) of 100
 *   streams each. Half the connections send ListAllConfig requests whose
 *   bodies never finish (1,000 of the 5,000 bytes announced) and keep
 *   reading; the other half send complete WatchConfig requests and then
 *   never read again, nor answer a PING. A reading connection the server
 *   closes is reopened after a second.
 * - `idle`: TCP connections that send nothing, or the HTTP/2 preface and a
 *   HEADERS frame without END_HEADERS; each is reopened a second (with
 *   jitter) after the server closes or refuses it.
 * - `lists`: well-formed unfiltered ListAllConfig calls through the
 *   generated client, 100 per HTTP/2 connection; each slot calls again as
 *   soon as it is answered (after 200 ms when refused, as retry advice asks).
 */
import { connect, type Socket } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  createRegistrarConnection,
  type RegistrarConnection,
} from "../../clients/agent/registrar-connection.js";
import {
  encodeFrame,
  Flag,
  FrameType,
  grpcEnvelope,
  grpcRequestHeaders,
  headerBlock,
  openRawH2,
  PREFACE,
  settingsFrame,
} from "../../test/support/raw-h2.js";
import { summarize } from "../stats.js";
import type { AttackCommand, AttackMode, AttackReport, AttackStats } from "./attack-protocol.js";

const LIST_ALL = "/aether.registry.v1.ConfigService/ListAllConfig";
const WATCH = "/aether.registry.v1.ConfigService/WatchConfig";
const STREAMS_PER_CONNECTION = 100;
const REOPEN_MS = 1_000;

const send = (report: AttackReport): void => {
  process.send?.(report);
};

let running = true;
const counters = {
  connectionsOpened: 0,
  connectionsClosed: 0,
  connectErrors: 0,
  open: 0,
  peakOpen: 0,
  requests: 0,
  resets: 0,
};
const outcomes: Record<string, number> = {};
const okLatencies: number[] = [];
const sockets = new Set<Socket>();

function opened(socket: Socket): void {
  counters.connectionsOpened++;
  counters.open++;
  counters.peakOpen = Math.max(counters.peakOpen, counters.open);
  sockets.add(socket);
  socket.once("close", () => {
    counters.open--;
    sockets.delete(socket);
    if (running) counters.connectionsClosed++;
  });
}

/** A stream-flooding connection; reopened while running when it reads and is closed. */
async function streamConnection(port: number, slot: number): Promise<void> {
  const reading = slot % 2 === 0;
  while (running) {
    let raw: Awaited<ReturnType<typeof openRawH2>>;
    try {
      raw = await openRawH2(port);
    } catch {
      counters.connectErrors++;
      await delay(REOPEN_MS);
      continue;
    }
    opened(raw.socket);
    const frames: Buffer[] = [];
    for (let i = 0; i < STREAMS_PER_CONNECTION; i++) {
      const id = 1 + 2 * i;
      const headers = headerBlock(grpcRequestHeaders(reading ? LIST_ALL : WATCH));
      frames.push(encodeFrame(FrameType.HEADERS, Flag.END_HEADERS, id, headers));
      frames.push(
        reading
          ? encodeFrame(FrameType.DATA, 0, id, grpcEnvelope(new Uint8Array(1_000), 5_000))
          : encodeFrame(FrameType.DATA, Flag.END_STREAM, id, grpcEnvelope(new Uint8Array(0))),
      );
    }
    raw.write(Buffer.concat(frames));
    counters.requests += STREAMS_PER_CONNECTION;
    if (!reading) {
      // Never read again: the kernel's buffers fill and the server's writes stall.
      raw.socket.pause();
      return;
    }
    await raw.closedPromise;
    counters.resets += raw.frames.filter((f) => f.type === FrameType.RST_STREAM).length;
    await delay(REOPEN_MS);
  }
}

/** An idle connection, reopened while running whenever it is closed or refused. */
async function idleConnection(port: number, slot: number): Promise<void> {
  // Half the header block: a HEADERS frame without END_HEADERS, never continued.
  const unfinished = Buffer.concat([
    PREFACE,
    settingsFrame(),
    encodeFrame(FrameType.HEADERS, 0, 1, headerBlock(grpcRequestHeaders(LIST_ALL)).subarray(0, 20)),
  ]);
  while (running) {
    const socket = connect({ host: "127.0.0.1", port });
    const established = await new Promise<boolean>((resolve) => {
      socket.once("connect", () => resolve(true));
      socket.once("error", () => resolve(false));
    });
    socket.on("error", () => undefined);
    if (!established) {
      counters.connectErrors++;
      socket.destroy();
    } else {
      opened(socket);
      if (slot % 2 === 1) socket.write(unfinished);
      socket.resume();
      await new Promise<void>((resolve) => socket.once("close", () => resolve()));
    }
    await delay(REOPEN_MS + Math.random() * REOPEN_MS);
  }
}

/** One of `count` concurrent ListAllConfig slots on `client`. */
async function listSlot(client: RegistrarConnection["client"]): Promise<void> {
  while (running) {
    counters.requests++;
    const started = performance.now();
    try {
      await client.listAllConfig({});
      okLatencies.push(performance.now() - started);
      outcomes.ok = (outcomes.ok ?? 0) + 1;
    } catch (error) {
      const name = error instanceof ConnectError ? (Code[error.code] ?? "unknown") : "unknown";
      outcomes[name] = (outcomes[name] ?? 0) + 1;
      if (running) await delay(200);
    }
  }
}

const listConnections: RegistrarConnection[] = [];

function start(mode: AttackMode, port: number, count: number): void {
  if (mode === "streams") {
    const connections = Math.ceil(count / STREAMS_PER_CONNECTION);
    for (let slot = 0; slot < connections; slot++) void streamConnection(port, slot);
  } else if (mode === "idle") {
    for (let slot = 0; slot < count; slot++) void idleConnection(port, slot);
  } else {
    const connections = Math.ceil(count / STREAMS_PER_CONNECTION);
    for (let c = 0; c < connections; c++) {
      // The agent's own connection, without its PINGs: nothing but the calls on the wire.
      const connection = createRegistrarConnection({
        baseUrl: `http://127.0.0.1:${port}`,
        pingIntervalMs: 3_600_000,
      });
      listConnections.push(connection);
      const slots = Math.min(STREAMS_PER_CONNECTION, count - c * STREAMS_PER_CONNECTION);
      for (let s = 0; s < slots; s++) void listSlot(connection.client);
    }
  }
}

function stats(mode: AttackMode): AttackStats {
  const { open: _open, ...rest } = counters;
  return {
    mode,
    ...rest,
    outcomes: { ...outcomes },
    okLatency: okLatencies.length === 0 ? undefined : summarize(okLatencies),
  };
}

let mode: AttackMode = "idle";
process.on("message", (command: AttackCommand) => {
  if (command.type === "start") {
    mode = command.mode;
    start(command.mode, command.port, command.count);
    send({ type: "started" });
    return;
  }
  running = false;
  const report: AttackReport = { type: "stats", stats: stats(mode) };
  for (const connection of listConnections) connection.close();
  for (const socket of sockets) socket.destroy();
  // Exits once the report is handed to the IPC channel.
  process.send?.(report, () => process.exit(0));
});
process.on("uncaughtException", (error) => {
  send({ type: "error", message: String(error?.stack ?? error) });
});
send({ type: "ready" });
