/**
 * Unreachable stores fail with the right reason within the configured bounds (the
 * test timeout is the bound; no timing assertions), and injected secrets never reach
 * an error message or an identity.
 */
import { describe, expect } from "vitest";
import { it } from "@effect/vitest";
import { Effect } from "effect";
import * as MinioStore from "../../src/adapters/minioObjectStore.js";
import * as S3Store from "../../src/adapters/s3ObjectStore.js";
import {
  ObjectStore,
  type ObjectStoreService,
  type StoreError,
} from "../../src/ports/ObjectStore.js";
import { freshPrefix, s3TestEnv, storeOptions, withEnv } from "./env.js";
import { closedPort, silentServer } from "./servers.js";

const env = s3TestEnv();

const adapters = [
  ["s3", S3Store.layer],
  ["minio", MinioStore.layer],
] as const;

const body = new TextEncoder().encode("body");

/** The failure of `effect`; its success is a defect (the operation was expected to fail). */
const failureOf = <A>(operation: string, effect: Effect.Effect<A, StoreError>) =>
  Effect.flip(effect).pipe(
    Effect.catchAll(() => Effect.dieMessage(`${operation} unexpectedly succeeded`)),
    Effect.map((error) => [operation, error] as const),
  );

/** Every operation of the port, each run to its failure. */
const allFailures = (store: ObjectStoreService) =>
  Effect.all(
    [
      failureOf("get", store.get("current")),
      failureOf("head", store.head("current")),
      failureOf("list", store.list("")),
      failureOf("delete", store.delete("current")),
      failureOf("create", store.put("current", body, { _tag: "IfNoneMatch" })),
      failureOf("replace", store.put("current", body, { _tag: "IfMatch", etag: "abc" })),
    ],
    { concurrency: "unbounded" },
  );

const quick = { connectTimeoutMs: 500, requestTimeoutMs: 1_000 } as const;

describe.each(adapters)("the %s adapter against a broken endpoint", (_name, layer) => {
  it.live(
    "a closed loopback port: every operation fails Unavailable (nothing was sent)",
    () =>
      Effect.gen(function* () {
        const endpoint = yield* closedPort;
        const failures = yield* Effect.flatMap(ObjectStore, allFailures).pipe(
          Effect.provide(layer({ ...storeOptions(env, "p"), ...quick, endpoint })),
        );
        for (const [operation, error] of failures) {
          expect([operation, error.reason]).toEqual([operation, "Unavailable"]);
        }
      }),
    30_000,
  );

  it.scopedLive(
    "a port that accepts but never answers: reads Unavailable, writes Ambiguous, within the request timeout",
    () =>
      Effect.gen(function* () {
        const endpoint = yield* silentServer;
        const failures = yield* Effect.flatMap(ObjectStore, allFailures).pipe(
          Effect.provide(layer({ ...storeOptions(env, "p"), ...quick, endpoint })),
        );
        const reasons = Object.fromEntries(
          failures.map(([operation, error]) => [operation, error.reason]),
        );
        expect(reasons).toEqual({
          get: "Unavailable",
          head: "Unavailable",
          list: "Unavailable",
          delete: "Ambiguous",
          create: "Ambiguous",
          replace: "Ambiguous",
        });
      }),
    30_000,
  );

  it.live("an endpoint that is not an http(s) URL fails every request with Unavailable", () =>
    Effect.gen(function* () {
      const failures = yield* Effect.flatMap(ObjectStore, allFailures).pipe(
        Effect.provide(layer({ ...storeOptions(env, "p"), endpoint: "ftp://127.0.0.1:1" })),
      );
      for (const [, error] of failures) expect(error.reason).toBe("Unavailable");
    }),
  );
});

describe.each(adapters)("the %s adapter never reveals secrets", (_name, layer) => {
  const secret = `topSecret${Math.random().toString(36).slice(2)}`;
  const keyId = `AKIALEAK${Math.random().toString(36).slice(2, 10).toUpperCase()}`;
  const userInfo = `leakuser${Math.random().toString(36).slice(2, 8)}`;

  const leaks = (text: string) =>
    [secret, keyId, userInfo, env.secretAccessKey].filter((s) => text.includes(s));

  it.live("in identities and in failures against the real server", () =>
    withEnv(
      { AWS_SECRET_ACCESS_KEY: secret, AWS_ACCESS_KEY_ID: keyId },
      Effect.gen(function* () {
        const store = yield* ObjectStore;
        expect(leaks(store.identity)).toEqual([]);
        expect(store.identity).toContain(new URL(env.endpoint).host);
        const failures = yield* allFailures(store);
        for (const [, error] of failures) {
          expect(error.reason).toBe("AccessDenied");
          expect(leaks(`${error.message} ${JSON.stringify(error)} ${String(error)}`)).toEqual([]);
        }
      }).pipe(
        Effect.provide(
          layer({
            ...storeOptions(env, freshPrefix("leak")),
            endpoint: env.endpoint.replace("://", `://${userInfo}:${secret}@`),
          }),
        ),
      ),
    ),
  );

  it.live("in failures against an unreachable endpoint with user-info", () =>
    withEnv(
      { AWS_SECRET_ACCESS_KEY: secret, AWS_ACCESS_KEY_ID: keyId },
      Effect.gen(function* () {
        const endpoint = (yield* closedPort).replace("://", `://${userInfo}:${secret}@`);
        const failures = yield* Effect.flatMap(ObjectStore, (store) => {
          expect(leaks(store.identity)).toEqual([]);
          return allFailures(store);
        }).pipe(Effect.provide(layer({ ...storeOptions(env, "p"), ...quick, endpoint })));
        for (const [, error] of failures) {
          expect(leaks(`${error.message} ${JSON.stringify(error)} ${String(error)}`)).toEqual([]);
        }
      }),
    ),
  );
});
