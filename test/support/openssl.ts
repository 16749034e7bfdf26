/**
 * The `openssl` runner for tests: re-exported from services/dev-pki/, where
 * it lives so that the sandbox can make its PKI too.
 */
export { OPENSSL, openssl, requireBinary } from "../../services/dev-pki/openssl.js";
