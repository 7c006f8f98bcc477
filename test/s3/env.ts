/**
 * The S3 integration suite's environment: the endpoint and credentials of a real
 * S3-compatible server. Absent → the suite FAILS with instructions (never skips), so a
 * CI run without the server cannot pass silently.
 */
import { Effect } from "effect";
import type { S3StoreOptions } from "../../src/adapters/s3ObjectStore.js";

/** The variables the suite reads. */
export interface S3TestEnv {
  readonly endpoint: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly region: string;
  readonly bucket: string;
}

const required = [
  "AWS_ENDPOINT_URL_S3",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_REGION",
  "S3_BUCKET",
] as const;

/** How to provide the environment, printed when it is missing. */
export const howToStart =
  "The S3 integration suite needs a real S3-compatible server. Start one and export its environment:\n" +
  '  eval "$(bash scripts/s3/start-ceph-rgw.sh /tmp/quire-s3)"   # then: npm run test:s3; stop with bash scripts/s3/stop-ceph-rgw.sh /tmp/quire-s3\n' +
  "or run everything in one go:\n" +
  "  bash scripts/with-s3.sh npm run test:s3";

/** Reads the environment; throws with {@link howToStart} when any variable is missing. */
export const s3TestEnv = (): S3TestEnv => {
  const missing = required.filter((name) => (process.env[name] ?? "") === "");
  if (missing.length > 0) {
    throw new Error(`Missing ${missing.join(", ")}.\n${howToStart}`);
  }
  const get = (name: (typeof required)[number]) => process.env[name] ?? "";
  return {
    endpoint: get("AWS_ENDPOINT_URL_S3"),
    accessKeyId: get("AWS_ACCESS_KEY_ID"),
    secretAccessKey: get("AWS_SECRET_ACCESS_KEY"),
    region: get("AWS_REGION"),
    bucket: get("S3_BUCKET"),
  };
};

/** A fresh random prefix so runs never see each other's objects. */
export const freshPrefix = (label: string): string =>
  `quire-test/${label}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;

/** Adapter options for the test server under `prefix`, with short test timeouts. */
export const storeOptions = (env: S3TestEnv, prefix: string): S3StoreOptions => ({
  bucket: env.bucket,
  prefix,
  endpoint: env.endpoint,
  region: env.region,
  forcePathStyle: true,
  connectTimeoutMs: 2_000,
  requestTimeoutMs: 10_000,
});

/**
 * Runs `effect` with some environment variables replaced (e.g. wrong credentials for
 * the SDK chain, which reads them when a client first signs), restoring them after.
 */
export const withEnv = <A, E, R>(
  overrides: Readonly<Record<string, string>>,
  effect: Effect.Effect<A, E, R>,
): Effect.Effect<A, E, R> =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const saved = Object.fromEntries(
        Object.keys(overrides).map((name) => [name, process.env[name]]),
      );
      Object.assign(process.env, overrides);
      return saved;
    }),
    () => effect,
    (saved) =>
      Effect.sync(() => {
        for (const [name, value] of Object.entries(saved)) {
          if (value === undefined) delete process.env[name];
          else process.env[name] = value;
        }
      }),
  );
