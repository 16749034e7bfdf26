/** The ConnectError a call fails with, for tests that expect a call to fail. */
import { ConnectError } from "@connectrpc/connect";

/** Calls `call` and returns the ConnectError it rejects with; throws when it succeeds. */
export async function connectErrorOf(call: () => Promise<unknown>): Promise<ConnectError> {
  try {
    await call();
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error("expected the call to fail");
}
