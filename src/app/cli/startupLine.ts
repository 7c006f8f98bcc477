/**
 * The one line a process that could not start prints on stderr (docs/logging.md). Its
 * headline says what happened as the error's reason does: a store that answered and
 * refused (access denied, a TLS handshake failed, a missing bucket) is not "unavailable",
 * and a person reading only the headline would otherwise wait for it to come back.
 */
import type { DomainError } from "../../domain/errors.js";
import type { StartupError } from "../layers.js";

/** The headline of a store's startup failure, from the probe's own error. */
const storeHeadline = (error: DomainError | undefined): string => {
  switch (error?.reason) {
    case "ACCESS_DENIED":
      return "store refused access";
    case "BUCKET_MISSING":
      return "no such bucket";
    case "TLS_FAILED":
      return "store TLS handshake failed";
    case "THROTTLED":
      return "store asked to slow down";
    default:
      return error?.code === "INCOMPATIBLE_STORE" ? "incompatible store" : "store unavailable";
  }
};

/**
 * `quire: <headline>: <message>` for a failed start. A directory refused for a permission
 * or a read-only file system says so, with its code and reason (ENGINE_FAILED ·
 * LOCAL_ACCESS: starting again fails the same way until someone fixes it), as `--json` does.
 */
export const startupLine = (error: StartupError): string =>
  error.kind === "config"
    ? `quire: invalid configuration: ${error.message}`
    : error.kind === "store"
      ? `quire: ${storeHeadline(error.error)}: ${error.message}`
      : error.detail === "permission denied" || error.detail === "read-only file system"
        ? `quire: ${error.detail}: ENGINE_FAILED · LOCAL_ACCESS: ${error.message}`
        : `quire: cannot start: ${error.message}`;
