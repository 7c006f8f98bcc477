/**
 * The compatibility probe against the real S3 server (passes, leaves no key), a
 * missing bucket, wrong credentials, the real server behind a wrapper whose If-Match of
 * a missing key creates it (refused), and s3rver (ignores conditional headers → refused).
 */
import { describe, expect } from "vitest";
import { it } from "@effect/vitest";
import { Effect, Exit, Layer } from "effect";
import * as FaultyStore from "../../src/adapters/faultyObjectStore.js";
import * as IdGeneratorAdapter from "../../src/adapters/idGenerator.js";
import * as MinioStore from "../../src/adapters/minioObjectStore.js";
import * as S3Store from "../../src/adapters/s3ObjectStore.js";
import { probeStore } from "../../src/app/usecases/commit/probe.js";
import type { DomainError } from "../../src/domain/errors.js";
import { ObjectStore } from "../../src/ports/ObjectStore.js";
import { freshPrefix, s3TestEnv, storeOptions, withEnv } from "./env.js";
import { s3rver, s3rverCredentials } from "./servers.js";

const env = s3TestEnv();

const adapters = [
  ["s3", S3Store.layer],
  ["minio", MinioStore.layer],
] as const;

const probeWith = (store: Layer.Layer<ObjectStore>) =>
  Effect.gen(function* () {
    const exit = yield* probeStore.pipe(Effect.provide(IdGeneratorAdapter.layer), Effect.exit);
    // A missing bucket cannot be listed: there is nothing to leave behind.
    const left = yield* Effect.flatMap(ObjectStore, (s) => s.list("probe/")).pipe(
      Effect.catchIf(
        (error) => error.reason === "BucketMissing",
        () => Effect.succeed([]),
      ),
    );
    return { exit, left };
  }).pipe(Effect.provide(store));

const failureOf = (exit: Exit.Exit<void, DomainError>): DomainError => {
  if (Exit.isSuccess(exit)) throw new Error("the probe succeeded");
  if (exit.cause._tag !== "Fail") throw new Error(`the probe died: ${String(exit.cause)}`);
  return exit.cause.error;
};

describe.each(adapters)("probe with the %s adapter", (_name, layer) => {
  it.live("passes on the real server and leaves no probe key", () =>
    Effect.gen(function* () {
      const { exit, left } = yield* probeWith(layer(storeOptions(env, freshPrefix("probe"))));
      expect(exit).toEqual(Exit.void);
      expect(left).toEqual([]);
    }),
  );

  it.live("passes with an empty prefix (keys at the bucket root) and cleans up", () =>
    Effect.gen(function* () {
      const { exit } = yield* probeWith(layer({ ...storeOptions(env, ""), prefix: "" }));
      expect(exit).toEqual(Exit.void);
    }),
  );

  it.live("names a missing bucket BUCKET_MISSING", () =>
    Effect.gen(function* () {
      const bucket = `quire-missing-${Date.now().toString(36)}`;
      const { exit } = yield* probeWith(
        layer({ ...storeOptions(env, freshPrefix("probe")), bucket }),
      );
      const error = failureOf(exit);
      expect(error.code).toBe("INCOMPATIBLE_STORE");
      expect(error.reason).toBe("BUCKET_MISSING");
    }),
  );

  it.live("names a wrong secret ACCESS_DENIED and never prints it", () =>
    Effect.gen(function* () {
      const secret = `wrongSecret${Math.random().toString(36).slice(2)}`;
      const error = yield* withEnv(
        { AWS_SECRET_ACCESS_KEY: secret },
        Effect.map(probeStore.pipe(Effect.provide(IdGeneratorAdapter.layer)), () => undefined).pipe(
          Effect.provide(layer(storeOptions(env, freshPrefix("probe")))),
          Effect.flip,
        ),
      );
      expect(error?.reason).toBe("ACCESS_DENIED");
      expect(JSON.stringify(error)).not.toContain(secret);
      expect(error?.message).not.toContain(secret);
    }),
  );

  it.live("names an unknown access key ACCESS_DENIED and never prints it", () =>
    Effect.gen(function* () {
      const keyId = `AKIAQUIRETEST${Math.random().toString(36).slice(2, 8).toUpperCase()}`;
      const error = yield* withEnv(
        { AWS_ACCESS_KEY_ID: keyId },
        probeStore.pipe(
          Effect.provide(IdGeneratorAdapter.layer),
          Effect.provide(layer(storeOptions(env, freshPrefix("probe")))),
          Effect.flip,
        ),
      );
      expect(error.reason).toBe("ACCESS_DENIED");
      expect(JSON.stringify(error)).not.toContain(keyId);
      expect(error.message).not.toContain(keyId);
      expect(error.message).not.toContain(env.secretAccessKey);
    }),
  );

  it.live(
    "refuses the real server behind a wrapper whose If-Match of a missing key creates it with IF_MATCH_CREATES, leaving no key",
    () =>
      Effect.gen(function* () {
        // The fault-injecting store over the real adapter, behaving like MinIO before
        // RELEASE.2025-09-06: the one broken promise is the If-Match of a missing key.
        const wrapped = FaultyStore.layer(layer(storeOptions(env, freshPrefix("probe"))), {
          rules: [{ fault: { _tag: "IfMatchCreates" }, times: Number.POSITIVE_INFINITY }],
        });
        const { exit, left } = yield* probeWith(wrapped);
        const error = failureOf(exit);
        expect([error.code, error.reason, error.action]).toEqual([
          "INCOMPATIBLE_STORE",
          "IF_MATCH_CREATES",
          "CHECK_CONFIGURATION",
        ]);
        expect(left).toEqual([]);
      }),
  );

  it.scopedLive(
    "refuses s3rver (ignores conditional headers) with NO_CONDITIONAL_CREATE, leaving no key",
    () =>
      Effect.gen(function* () {
        const endpoint = yield* s3rver("fake-bucket");
        const options = {
          ...storeOptions(env, freshPrefix("probe")),
          bucket: "fake-bucket",
          endpoint,
        };
        const { exit, left } = yield* withEnv(s3rverCredentials, probeWith(layer(options)));
        const error = failureOf(exit);
        expect(error.code).toBe("INCOMPATIBLE_STORE");
        expect(error.reason).toBe("NO_CONDITIONAL_CREATE");
        expect(error.action).toBe("CHECK_CONFIGURATION");
        expect(left).toEqual([]);
      }),
  );
});
