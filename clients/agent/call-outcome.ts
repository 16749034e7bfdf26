/**
 * An interceptor that reports how each call to the registrar ended, for the
 * agent's trust state (`registrar-trust.ts`): a unary call that answered, or
 * a stream that delivered a message, succeeded; a call or stream that threw
 * failed, with its error. A call the agent cancelled itself (its signal
 * aborted) reports nothing.
 */
import type { Interceptor } from "@connectrpc/connect";

/** Where the outcomes go. */
export interface CallOutcomeObserver {
  succeeded(): void;
  failed(error: unknown): void;
}

/** Creates the interceptor reporting to `observer`. */
export function createCallOutcomeInterceptor(observer: CallOutcomeObserver): Interceptor {
  return (next) => async (request) => {
    const failed = (error: unknown): never => {
      if (!request.signal.aborted) observer.failed(error);
      throw error;
    };
    const response = await next(request).catch(failed);
    if (!response.stream) {
      observer.succeeded();
      return response;
    }
    const messages = response.message;
    return {
      ...response,
      message: (async function* () {
        try {
          for await (const message of messages) {
            observer.succeeded();
            yield message;
          }
        } catch (error) {
          failed(error);
        }
      })(),
    };
  };
}
