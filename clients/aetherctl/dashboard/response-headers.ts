/**
 * The security headers of `aetherctl dashboard`'s responses, pure: every
 * response says nosniff and no-referrer and may not be framed; HTML pages
 * get a Content-Security-Policy that lets them load and call only this
 * server. No CORS header is ever sent, so no other origin reads an answer.
 */

/** The Content-Security-Policy of every HTML page: this server only, no inline script or style. */
export const HTML_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "connect-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** The headers of every response, API calls and refusals included. */
export const COMMON_HEADERS: Readonly<Record<string, string>> = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-resource-policy": "same-origin",
  "cross-origin-opener-policy": "same-origin",
};

/** The headers of a response whose content type is `contentType`: the CSP when it is HTML. */
export function contentHeaders(contentType: string): Record<string, string> {
  return contentType.startsWith("text/html")
    ? { "content-type": contentType, "content-security-policy": HTML_CONTENT_SECURITY_POLICY }
    : { "content-type": contentType };
}
