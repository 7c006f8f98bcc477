/** The one error configuration parsing fails with. */
import { Data } from "effect";

/**
 * Invalid configuration or usage: the process prints `quire: invalid configuration:
 * <message>` (redacted) on stderr and exits 2 without serving. `message` never echoes
 * a rejected secret-bearing value (an endpoint with user-info, for instance).
 */
export class ConfigError extends Data.TaggedError("ConfigError")<{
  readonly message: string;
}> {}
