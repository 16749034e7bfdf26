import { BrokenCircuitError } from "cockatiel";
import {
  EtcdLeaseInvalidError,
  GRPCCancelledError,
  GRPCDeadlineExceededError,
  GRPCFailedPreconditionError,
  GRPCInvalidArgumentError,
  GRPCUnavailableError,
} from "etcd3";
import { describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../../services/registrar/store/config-store.js";
import { translateEtcdError } from "../../services/registrar/store/etcd-client.js";
import { failsHost, hostFaultPolicy } from "../../services/registrar/store/etcd-host-breaker.js";

describe("etcd host breaker", () => {
  it.each([
    ["no answer within the deadline", new GRPCDeadlineExceededError("deadline"), true],
    ["unreachable", new GRPCUnavailableError("connect refused"), true],
    ["a connection reset (recoverable)", new GRPCCancelledError("cancelled"), true],
    ["a refused request: invalid argument", new GRPCInvalidArgumentError("bad"), false],
    ["a refused request: failed precondition", new GRPCFailedPreconditionError("no"), false],
    ["an etcd answer: lease not found", new EtcdLeaseInvalidError("lease"), false],
    ["not an error", "oops", false],
  ])("%s counts against the member: %s", (_, error, expected) => {
    expect(failsHost(error)).toBe(expected);
  });

  it("with several endpoints, one failure sets the member aside: the next call is refused without being made", async () => {
    const policy = hostFaultPolicy(3)();
    let calls = 0;
    const fail = () => {
      calls++;
      return Promise.reject(new GRPCDeadlineExceededError("deadline"));
    };
    await expect(policy.execute(fail)).rejects.toBeInstanceOf(GRPCDeadlineExceededError);
    await expect(policy.execute(fail)).rejects.toBeInstanceOf(BrokenCircuitError);
    expect(calls).toBe(1);
  });

  it.each([
    ["several endpoints, a refused request", 3, new GRPCInvalidArgumentError("bad")],
    ["one endpoint, no answer", 1, new GRPCDeadlineExceededError("deadline")],
  ])("%s: the member stays in use", async (_, endpoints, error) => {
    const policy = hostFaultPolicy(endpoints)();
    let calls = 0;
    const fail = () => {
      calls++;
      return Promise.reject(error);
    };
    await expect(policy.execute(fail)).rejects.toBe(error);
    await expect(policy.execute(fail)).rejects.toBe(error);
    expect(calls).toBe(2);
  });

  it("a call refused because every member is set aside is the store being unavailable", () => {
    expect(translateEtcdError(new BrokenCircuitError(), "range")).toBeInstanceOf(
      StoreUnavailableError,
    );
  });
});
