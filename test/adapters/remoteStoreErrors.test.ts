/**
 * The S3 and MinIO adapters against a scripted local HTTP server: every vendor answer
 * the real test server cannot produce on demand (AWS's 409, 503 SlowDown, 403 codes,
 * 500s, answers without ETag) maps to the right port reason, the headers sent are the
 * ones the quirks require, and vendor text never reaches a message. Runs in `npm test`
 * (no real S3 server needed).
 */
import * as http from "node:http";
import { describe, expect } from "vitest";
import { it } from "@effect/vitest";
import { Effect, Layer, Option } from "effect";
import * as MinioStore from "../../src/adapters/minioObjectStore.js";
import * as S3Store from "../../src/adapters/s3ObjectStore.js";
import {
  bareEtag,
  fromBucketKey,
  ifMatchValue,
  storeIdentity,
  toBucketKey,
  isTlsFailure,
} from "../../src/adapters/remoteStoreSupport.js";
import { ObjectStore, type ObjectStoreService } from "../../src/ports/ObjectStore.js";

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
}

interface Answer {
  readonly status: number;
  readonly headers?: Record<string, string>;
  readonly body?: string;
}

type Script = (request: Seen, index: number) => Answer;

const errorXml = (code: string, message = "vendor text with sekrit-token-123") =>
  `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message><RequestId>r</RequestId></Error>`;

const xmlError = (status: number, code: string): Answer => ({
  status,
  headers: { "content-type": "application/xml" },
  body: errorXml(code),
});

/** A scripted S3 endpoint on loopback; records every request. */
const stubServer = (script: Script) =>
  Effect.acquireRelease(
    Effect.promise(
      () =>
        new Promise<{ server: http.Server; seen: Array<Seen>; endpoint: string }>((resolve) => {
          const seen: Array<Seen> = [];
          const server = http.createServer((request, response) => {
            request.resume();
            request.on("end", () => {
              const entry = {
                method: request.method ?? "",
                url: request.url ?? "",
                headers: request.headers,
              };
              seen.push(entry);
              const answer = script(entry, seen.length - 1);
              const body = answer.body ?? "";
              response.writeHead(answer.status, {
                "content-length": String(Buffer.byteLength(body)),
                ...answer.headers,
              });
              response.end(request.method === "HEAD" ? undefined : body);
            });
          });
          server.listen(0, "127.0.0.1", () => {
            const address = server.address();
            const port = typeof address === "object" && address !== null ? address.port : 0;
            resolve({ server, seen, endpoint: `http://127.0.0.1:${port}` });
          });
        }),
    ),
    ({ server }) =>
      Effect.promise(
        () =>
          new Promise<void>((resolve) => {
            server.closeAllConnections();
            server.close(() => resolve());
          }),
      ),
  );

const credentials = {
  AWS_ACCESS_KEY_ID: "AKIASTUBSTUBSTUBSTUB",
  AWS_SECRET_ACCESS_KEY: "stub-secret-value",
};

/** Runs `use` against an adapter pointed at a scripted server, with stub credentials. */
const withStub = <A>(
  layer: (options: S3Store.S3StoreOptions) => Layer.Layer<ObjectStore>,
  script: Script,
  use: (store: ObjectStoreService, seen: ReadonlyArray<Seen>) => Effect.Effect<A, never>,
  scheme: "http" | "https" = "http",
) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const saved = { ...process.env };
      Object.assign(process.env, credentials);
      return saved;
    }),
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { seen, endpoint } = yield* stubServer(script);
          const store = yield* Effect.provide(
            ObjectStore,
            layer({
              bucket: "bkt",
              prefix: "pre/fix",
              // The stub speaks plain HTTP; "https" points a TLS client at it.
              endpoint: endpoint.replace(/^http:/, `${scheme}:`),
              region: "us-east-1",
              forcePathStyle: true,
              connectTimeoutMs: 1_000,
              requestTimeoutMs: 2_000,
            }),
          );
          return yield* use(store, seen);
        }),
      ),
    (saved) =>
      Effect.sync(() => {
        for (const name of Object.keys(credentials)) {
          if (saved[name] === undefined) delete process.env[name];
          else process.env[name] = saved[name];
        }
      }),
  );

const body = new TextEncoder().encode("our bytes");
const ifMatch = { _tag: "IfMatch", etag: '"0123456789abcdef0123456789abcdef"' } as const;

const adapters = [
  ["s3", S3Store.layer],
  ["minio", MinioStore.layer],
] as const;

const reasonOf = <A>(
  effect: Effect.Effect<A, { readonly reason: string; readonly message: string }>,
) =>
  Effect.flip(effect).pipe(
    Effect.catchAll(() => Effect.succeed({ reason: "succeeded", message: "" })),
    Effect.map((error) => {
      expect(error.message).not.toContain("sekrit");
      expect(error.message).not.toContain(credentials.AWS_SECRET_ACCESS_KEY);
      expect(error.message).not.toContain(credentials.AWS_ACCESS_KEY_ID);
      return error.reason;
    }),
  );

describe.each(adapters)("the %s adapter's error mapping (scripted server)", (_name, layer) => {
  const putCases: ReadonlyArray<readonly [string, Answer, string]> = [
    ["412 PreconditionFailed", xmlError(412, "PreconditionFailed"), "PreconditionFailed"],
    [
      "409 ConditionalRequestConflict (AWS race)",
      xmlError(409, "ConditionalRequestConflict"),
      "PreconditionFailed",
    ],
    ["404 NoSuchKey on If-Match (AWS)", xmlError(404, "NoSuchKey"), "PreconditionFailed"],
    ["404 NoSuchBucket", xmlError(404, "NoSuchBucket"), "BucketMissing"],
    ["403 AccessDenied", xmlError(403, "AccessDenied"), "AccessDenied"],
    ["403 InvalidAccessKeyId", xmlError(403, "InvalidAccessKeyId"), "AccessDenied"],
    ["403 SignatureDoesNotMatch", xmlError(403, "SignatureDoesNotMatch"), "AccessDenied"],
    ["400 InvalidArgument", xmlError(400, "InvalidArgument"), "Unavailable"],
    ["503 SlowDown", xmlError(503, "SlowDown"), "Throttled"],
    // It took effect, but without its ETag the caller cannot use the answer: only a read
    // tells (an accepted publication must not be reported as damage in the store).
    ["200 without an ETag", { status: 200 }, "Ambiguous"],
  ];
  for (const [label, answer, expected] of putCases) {
    it.live(`If-Match put answered ${label} → ${expected}`, () =>
      withStub(
        layer,
        () => answer,
        (store) => reasonOf(store.put("current", body, ifMatch)),
      ).pipe(Effect.map((reason) => expect(reason).toBe(expected))),
    );
  }

  it.live(
    "an https:// endpoint on a plain-HTTP port is TlsFailed, not retried, on reads and writes",
    () =>
      withStub(
        layer,
        () => ({ status: 200, headers: { etag: '"abc"' } }),
        (store, seen) =>
          Effect.gen(function* () {
            const failure = yield* Effect.flip(store.get("current")).pipe(Effect.orDie);
            expect(failure.reason).toBe("TlsFailed");
            expect(failure.message).toMatch(/TLS/);
            expect(yield* reasonOf(store.put("current", body, ifMatch))).toBe("TlsFailed");
            expect(yield* reasonOf(store.put("packs/p", body, { _tag: "Unconditional" }))).toBe(
              "TlsFailed",
            );
            // The handshake failed before any request was sent.
            expect(seen).toHaveLength(0);
          }),
        "https",
      ),
  );

  it.live("marks a write answered 200 without an ETag, unlike a lost answer", () =>
    withStub(
      layer,
      () => ({ status: 200 }),
      (store) =>
        Effect.flip(store.put("probe/x", body, { _tag: "IfNoneMatch" })).pipe(
          Effect.map((error) => {
            expect(error.reason).toBe("Ambiguous");
            expect(error.answeredWithoutEtag).toBe(true);
          }),
          Effect.orDie,
        ),
    ),
  );

  it.live("sends If-Match unquoted and If-None-Match as *, under the prefix", () =>
    withStub(
      layer,
      () => ({ status: 200, headers: { etag: '"abc"' } }),
      (store, seen) =>
        Effect.gen(function* () {
          expect(yield* store.put("current", body, ifMatch)).toEqual({ etag: "abc" });
          expect(yield* store.put("probe/x", body, { _tag: "IfNoneMatch" })).toEqual({
            etag: "abc",
          });
          expect(seen[0]?.headers["if-match"]).toBe("0123456789abcdef0123456789abcdef");
          expect(seen[0]?.url).toMatch(/^\/bkt\/pre\/fix\/current(\?|$)/);
          expect(seen[1]?.headers["if-none-match"]).toBe("*");
          expect(seen[1]?.headers["if-match"]).toBeUndefined();
        }).pipe(Effect.orDie),
    ),
  );

  it.live("never sends an If-Match that could match any object", () =>
    withStub(
      layer,
      () => ({ status: 200, headers: { etag: '"abc"' } }),
      (store, seen) =>
        Effect.gen(function* () {
          for (const etag of ["*", "", '""', "a,b", 'W/"*"']) {
            expect(yield* reasonOf(store.put("current", body, { _tag: "IfMatch", etag }))).toBe(
              "PreconditionFailed",
            );
          }
          expect(seen).toHaveLength(0);
        }),
    ),
  );

  it.live("throttling is retried (3 attempts) and a 503 on the last attempt stays Throttled", () =>
    withStub(
      layer,
      () => xmlError(503, "SlowDown"),
      (store, seen) =>
        Effect.map(reasonOf(store.get("current")), (reason) => {
          expect(reason).toBe("Throttled");
          expect(seen).toHaveLength(3);
        }),
    ),
  );

  it.live(
    "a 500 on a read is Unavailable (retried), on an unconditional write Ambiguous (not retried)",
    () =>
      withStub(
        layer,
        () => xmlError(500, "InternalError"),
        (store, seen) =>
          Effect.gen(function* () {
            expect(yield* reasonOf(store.get("current"))).toBe("Unavailable");
            expect(seen).toHaveLength(3);
            expect(yield* reasonOf(store.put("packs/p", body, { _tag: "Unconditional" }))).toBe(
              "Ambiguous",
            );
            expect(seen).toHaveLength(4);
            expect(yield* reasonOf(store.delete("packs/p"))).toBe("Ambiguous");
          }),
      ),
  );

  describe("a conditional write answered HTTP 500 (RGW's race loser) is settled by one read", () => {
    const settle = (getAnswer: Answer) =>
      withStub(
        layer,
        (request) => (request.method === "PUT" ? xmlError(500, "UnknownError") : getAnswer),
        (store, seen) =>
          Effect.map(reasonOf(store.put("current", body, ifMatch)), (reason) => ({
            reason,
            puts: seen.filter((s) => s.method === "PUT").length,
          })),
      );

    it.live("another writer's bytes are current → PreconditionFailed", () =>
      Effect.map(
        settle({ status: 200, headers: { etag: '"fff"' }, body: "their bytes" }),
        (outcome) => expect(outcome).toEqual({ reason: "PreconditionFailed", puts: 1 }),
      ),
    );

    it.live("our bytes are current → Ambiguous", () =>
      Effect.map(
        settle({ status: 200, headers: { etag: '"eee"' }, body: "our bytes" }),
        (outcome) => expect(outcome).toEqual({ reason: "Ambiguous", puts: 1 }),
      ),
    );

    it.live("unchanged (the expected ETag) → resent, then Unavailable", () =>
      Effect.map(
        settle({
          status: 200,
          headers: { etag: '"0123456789abcdef0123456789abcdef"' },
          body: "old",
        }),
        (outcome) => expect(outcome).toEqual({ reason: "Unavailable", puts: 3 }),
      ),
    );

    it.live("the verifying read fails → Ambiguous", () =>
      Effect.map(settle(xmlError(500, "InternalError")), (outcome) =>
        expect(outcome).toEqual({ reason: "Ambiguous", puts: 1 }),
      ),
    );
  });

  it.live(
    "reads: 404 NoSuchKey is None, NoSuchBucket is BucketMissing, the body and bare ETag come back",
    () =>
      withStub(
        layer,
        (request) =>
          request.url.includes("missing")
            ? xmlError(404, "NoSuchKey")
            : request.url.includes("nobucket")
              ? xmlError(404, "NoSuchBucket")
              : { status: 200, headers: { etag: '"abc"' }, body: "hello" },
        (store) =>
          Effect.gen(function* () {
            expect(yield* store.get("missing")).toEqual(Option.none());
            expect(yield* reasonOf(store.get("nobucket"))).toBe("BucketMissing");
            const got = yield* store.get("present");
            expect(Option.map(got, (o) => [new TextDecoder().decode(o.body), o.etag])).toEqual(
              Option.some(["hello", "abc"]),
            );
          }).pipe(Effect.orDie),
      ),
  );
});

describe("remote store support", () => {
  it("prefixes keys and strips the prefix back", () => {
    expect(toBucketKey("", "current")).toBe("current");
    expect(toBucketKey("a/b", "current")).toBe("a/b/current");
    expect(fromBucketKey("a/b", "a/b/packs/x")).toBe("packs/x");
    expect(fromBucketKey("a/b", "a/bc/x")).toBeUndefined();
    expect(fromBucketKey("", "x")).toBe("x");
  });

  it("normalises ETags and refuses If-Match values that match more than one object", () => {
    expect(bareEtag('"abc"')).toBe("abc");
    expect(bareEtag('W/"abc"')).toBe("abc");
    expect(bareEtag("abc-2")).toBe("abc-2");
    expect(bareEtag('""')).toBeUndefined();
    expect(ifMatchValue('"abc"')).toBe("abc");
    for (const bad of ["*", '"*"', "", "a,b", "a b", 'a"b'])
      expect(ifMatchValue(bad)).toBeUndefined();
  });

  it("builds identities with the endpoint's path, without credentials", () => {
    const base = { bucket: "b", region: "us-east-1", forcePathStyle: true } as const;
    expect(storeIdentity("s3", { ...base, prefix: "" })).toBe("s3://b");
    expect(storeIdentity("s3", { ...base, prefix: "p/q" })).toBe("s3://b/p/q");
    expect(
      storeIdentity("minio", {
        ...base,
        prefix: "p",
        endpoint: "https://user:secret@host.example:9000/x?y#z",
      }),
    ).toBe("minio://b/p@host.example:9000/x");
    // Two gateways of one host at different paths are different stores.
    expect(storeIdentity("s3", { ...base, prefix: "p", endpoint: "http://gw/tenant-a/" })).toBe(
      "s3://b/p@gw/tenant-a",
    );
    expect(storeIdentity("s3", { ...base, prefix: "p", endpoint: "http://gw" })).toBe(
      "s3://b/p@gw",
    );
    expect(storeIdentity("s3", { ...base, prefix: "p", endpoint: "not a url" })).toBe(
      "s3://b/p@invalid-endpoint",
    );
  });

  it("calls a TLS failure of a write a handshake failure only when the server never spoke TLS", () => {
    const wrongVersion =
      "write EPROTO 80AC:error:0A00010B:SSL routines:ssl3_get_record:wrong version number";
    // An https:// endpoint on a plain-HTTP port: nothing was sent, reads and writes alike.
    expect(isTlsFailure("EPROTO", [wrongVersion], true)).toBe(true);
    expect(isTlsFailure("EPROTO", ["", wrongVersion], false)).toBe(true);
    // A certificate refused: only the handshake refuses one.
    expect(isTlsFailure("CERT_HAS_EXPIRED", [""], true)).toBe(true);
    expect(isTlsFailure("ERR_TLS_CERT_ALTNAME_INVALID", [""], true)).toBe(true);
    // A connection that may have carried the write, broken mid-stream: it may have landed.
    const badMac = "decryption failed or bad record mac";
    expect(isTlsFailure("ERR_SSL_DECRYPTION_FAILED_OR_BAD_RECORD_MAC", [badMac], true)).toBe(false);
    expect(isTlsFailure("EPROTO", ["write EPROTO: sslv3 alert bad record mac"], true)).toBe(false);
    // A read has no effect to lose: any TLS failure is one.
    expect(isTlsFailure("ERR_SSL_DECRYPTION_FAILED_OR_BAD_RECORD_MAC", [badMac], false)).toBe(true);
    expect(isTlsFailure("ECONNRESET", [wrongVersion], false)).toBe(false);
  });
});
