/**
 * The lease of one election campaign: granted, kept alive over one raw
 * keep-alive stream at a time, and revoked, each request with a deadline.
 * Unlike etcd3's lease (which notices a lost lease only after twice the TTL
 * without an answer), the lease counts as lost as soon as it can no longer
 * be proven alive: its TTL after the last keep-alive etcd answered, measured
 * from when that keep-alive was sent. A stream whose keep-alive goes
 * unanswered for a renewal interval (a frozen or cut-off member keeps it
 * open) is opened again, so the lease moves to a member that answers.
 */
import type { IDuplexStream, ILeaseKeepAliveRequest, ILeaseKeepAliveResponse } from "etcd3";
import type { Logger } from "../../runtime/logger.js";
import { callEtcd, closeStream, type EtcdClient } from "../store/etcd-client.js";
import { keepAliveIntervalMs, keepAliveStalled, leaseValidUntil } from "./etcd-election-rules.js";

/** The etcd client, request deadline and logger an election's requests use. */
export interface ElectionEtcd {
  /** The client, made with `createEtcdClient` (etcd-client.ts); used for raw calls only. */
  readonly client: EtcdClient;
  /** The bound on every request, in milliseconds. */
  readonly requestTimeoutMs: number;
  /** Where stream trouble and failed revocations are reported (at debug level). */
  readonly logger: Logger;
}

/** A lease etcd granted; see {@link grantLease}. */
export interface GrantedLease {
  /** The lease ID, as etcd's decimal string. */
  readonly id: string;
  /** The TTL etcd granted (which may exceed the one asked for), in milliseconds. */
  readonly ttlMs: number;
  /** When the grant request was sent (`Date.now()`): the lease is valid for `ttlMs` from then. */
  readonly grantSentAt: number;
}

/**
 * Asks etcd for a lease of `ttlSeconds` within the request deadline;
 * rejects as `callEtcd` does (etcd-client.ts) when etcd fails or is not there.
 */
export async function grantLease(etcd: ElectionEtcd, ttlSeconds: number): Promise<GrantedLease> {
  const grantSentAt = Date.now();
  const grant = await callEtcd(
    "lease grant",
    etcd.requestTimeoutMs,
    (callOptions) => etcd.client.leaseClient.leaseGrant({ TTL: ttlSeconds }, callOptions),
    etcd.client.endpointCount,
  );
  return { id: grant.ID, ttlMs: Number(grant.TTL) * 1_000, grantSentAt };
}

/**
 * Keeps a lease alive over one keep-alive stream at a time (re-opened when
 * it fails) and calls `onLost` once when etcd says the lease is gone, or
 * when its TTL has run out since the last answered keep-alive was sent.
 * Returns the function that stops it (after which `onLost` is not called).
 * Never raises an unhandled rejection or an unhandled `error` event.
 */
export function keepLeaseAlive(
  etcd: ElectionEtcd,
  lease: GrantedLease,
  onLost: (reason: string) => void,
): () => void {
  const { client, logger } = etcd;
  const { id: leaseId, ttlMs, grantSentAt } = lease;
  let validUntil = grantSentAt + ttlMs;
  let stream: IDuplexStream<ILeaseKeepAliveRequest, ILeaseKeepAliveResponse> | undefined;
  let sentTimes: number[] = [];
  let lostTimer: NodeJS.Timeout | undefined;
  let reopenTimer: NodeJS.Timeout | undefined;
  let closed = false;
  /** Sets the member of the current stream aside (for a stream that went silent). */
  let setMemberAside: ((reason: string) => void) | undefined;

  const close = (): void => {
    if (closed) return;
    closed = true;
    clearTimeout(lostTimer);
    clearTimeout(reopenTimer);
    clearInterval(interval);
    if (stream !== undefined) closeStream(stream);
    stream = undefined;
  };
  const lose = (reason: string): void => {
    if (closed) return;
    close();
    onLost(reason);
  };
  const armLostTimer = (): void => {
    clearTimeout(lostTimer);
    lostTimer = setTimeout(
      () => lose(`no keep-alive answered within the ${ttlMs} ms lease TTL`),
      Math.max(0, validUntil - Date.now()),
    );
  };
  const send = (): void => {
    if (stream === undefined) return;
    const waited = Date.now() - (sentTimes[0] ?? Date.now());
    if (keepAliveStalled(sentTimes[0], Date.now(), ttlMs)) {
      // Silent, not failed: the next stream must go to another member.
      setMemberAside?.(`no answer to a lease keep-alive for ${waited} ms`);
      streamFailed(stream, `no answer to a keep-alive for ${waited} ms`);
      return;
    }
    sentTimes.push(Date.now());
    stream.write({ ID: leaseId });
  };
  const streamFailed = (failed: typeof stream, reason: string): void => {
    if (closed || failed !== stream) return;
    if (stream !== undefined) closeStream(stream);
    stream = undefined;
    logger.debug({ reason }, "lease keep-alive stream failed; re-opening");
    reopenTimer = setTimeout(open, 200);
  };
  const open = (): void => {
    client.openLeaseKeepAliveStream().then(
      ({ stream: opened, setMemberAside: setAside }) => {
        // An 'error' listener first, always: an unhandled 'error' event would crash the process.
        opened.on("error", (error: Error) => streamFailed(opened, error.message));
        if (closed) {
          closeStream(opened);
          return;
        }
        stream = opened;
        setMemberAside = setAside;
        sentTimes = [];
        opened.on("data", (response: ILeaseKeepAliveResponse) => {
          const sentAt = sentTimes.shift() ?? grantSentAt;
          const answered = leaseValidUntil(validUntil, sentAt, response.TTL);
          if (answered === undefined) {
            lose("etcd says the lease has expired");
            return;
          }
          validUntil = answered;
          armLostTimer();
        });
        opened.on("end", () => streamFailed(opened, "the stream ended"));
        send();
      },
      (error: unknown) => {
        if (!closed) reopenTimer = setTimeout(open, 200);
        logger.debug({ err: error }, "could not open a lease keep-alive stream");
      },
    );
  };
  const interval = setInterval(send, keepAliveIntervalMs(ttlMs));
  armLostTimer();
  open();
  return close;
}

/**
 * Revokes a lease (deleting the candidate's key) with a deadline; failures
 * are only logged (the lease expires by itself). Never rejects.
 */
export async function revokeLease(etcd: ElectionEtcd, leaseId: string): Promise<void> {
  try {
    await callEtcd(
      "lease revoke",
      etcd.requestTimeoutMs,
      (callOptions) => etcd.client.leaseClient.leaseRevoke({ ID: leaseId }, callOptions),
      etcd.client.endpointCount,
    );
  } catch (error) {
    etcd.logger.debug({ err: error }, "could not revoke the election lease (it expires by itself)");
  }
}
