/**
 * The throwaway SPIFFE PKI parts for tests: re-exported from
 * services/dev-pki/, where they live so that the sandbox can make its PKI too.
 */
export {
  createSpiffeCa,
  issueSvid,
  type SpiffeCa,
  type SvidOptions,
  type TestSvid,
  writeJwksBundle,
} from "../../services/dev-pki/spiffe-ca.js";
