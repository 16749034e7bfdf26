/**
 * Real `node:tls` peers for the SPIFFE tests: a server whose SVID guard
 * verifies each client (an accepted one is greeted with its ID, a refused
 * one destroyed) and that echoes lines, and a client that checks the
 * server's SPIFFE ID and reads the greeting.
 */

import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import {
  connect,
  createServer,
  type SecureContextOptions,
  type Server,
  type TLSSocket,
} from "node:tls";
import { spiffeServerIdentity } from "../../services/runtime/tls/peer-svid.js";
import type { SvidVerification } from "../../services/runtime/tls/svid-verify.js";
import { guardTlsServer, peerSpiffeId } from "../../services/runtime/tls/tls-server-guard.js";
import type { TrustBundles } from "../../services/runtime/tls/trust-bundle.js";

/** A listening SVID-checking server and the verdicts it reached, in order. */
export interface SpiffeTlsServer {
  readonly server: Server;
  readonly port: number;
  readonly verdicts: SvidVerification[];
  close(): Promise<void>;
}

/**
 * Starts a TLS server on 127.0.0.1 with `options` (certificate, key, CAs)
 * that asks for client certificates, verifies each against `bundles()` and
 * greets an accepted client with `hello <its ID>\n`, then echoes each line.
 */
export async function startSpiffeTlsServer(
  options: SecureContextOptions,
  bundles: () => TrustBundles,
): Promise<SpiffeTlsServer> {
  const verdicts: SvidVerification[] = [];
  const sockets = new Set<TLSSocket>();
  const server = createServer({ ...options, requestCert: true, rejectUnauthorized: false });
  guardTlsServer(server, {
    bundles,
    onAccepted: (verdict) => verdicts.push(verdict),
    onRefused: (verdict) => verdicts.push(verdict),
  });
  server.on("secureConnection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    const id = peerSpiffeId(socket);
    if (id === undefined) return;
    socket.write(`hello ${id.text}\n`);
    socket.pipe(socket);
  });
  server.on("tlsClientError", () => {});
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    verdicts,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** What a client got: the socket, the server's first line (none if it closed first) or the error. */
export interface ClientOutcome {
  readonly socket: TLSSocket;
  readonly greeting?: string;
  readonly error?: Error;
  /** The serial of the certificate the server presented. */
  readonly serverSerial?: string;
}

/** Resolves with the next line `socket` receives, or undefined when it ends first. */
export function nextLine(socket: TLSSocket): Promise<string | undefined> {
  return new Promise((resolve) => {
    let buffered = "";
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      const newline = buffered.indexOf("\n");
      if (newline === -1) return;
      socket.off("data", onData);
      resolve(buffered.slice(0, newline));
    };
    socket.on("data", onData);
    socket.once("close", () => resolve(undefined));
  });
}

/**
 * Connects to `port` with the client certificate `files` (none when
 * undefined) and every CA of `bundles`, checking that the server is
 * `expectedId`; resolves once the server greeted, closed or failed.
 */
export function connectSpiffeClient(
  port: number,
  bundles: TrustBundles,
  expectedId: string,
  files?: { readonly cert: string; readonly key: string },
): Promise<ClientOutcome> {
  const ca = [...bundles.values()].flatMap((b) => b.authorities.map((a) => a.toString()));
  return new Promise((resolve) => {
    const socket = connect({
      host: "127.0.0.1",
      port,
      ca,
      ...(files === undefined
        ? {}
        : { cert: readFileSync(files.cert), key: readFileSync(files.key) }),
      checkServerIdentity: spiffeServerIdentity(() => bundles, { expectedId }),
    });
    socket.on("error", (error) => resolve({ socket, error }));
    socket.once("secureConnect", () => {
      const serverSerial = socket.getPeerCertificate().serialNumber;
      void nextLine(socket).then((greeting) =>
        resolve(
          greeting === undefined ? { socket, serverSerial } : { socket, greeting, serverSerial },
        ),
      );
    });
  });
}
