/**
 * Large bodies on the real server: unconditional puts above 16 MiB go multipart (the
 * ETag comes from a HEAD after Complete, RGW's Complete answers none), conditional
 * ones stay single PutObject; metadata lands as S3 user metadata; multipart ETags work
 * for If-Match across the S3 and the MinIO client; no multipart upload is left open.
 */
import { HeadObjectCommand, ListMultipartUploadsCommand, S3Client } from "@aws-sdk/client-s3";
import { describe, expect } from "vitest";
import { it } from "@effect/vitest";
import { Context, Effect, Layer, Option } from "effect";
import * as MinioStore from "../../src/adapters/minioObjectStore.js";
import * as S3Store from "../../src/adapters/s3ObjectStore.js";
import { ObjectStore, type ObjectStoreService } from "../../src/ports/ObjectStore.js";
import { freshPrefix, s3TestEnv, storeOptions } from "./env.js";

const env = s3TestEnv();

const adapters = [
  ["s3", S3Store.layer, MinioStore.layer],
  ["minio", MinioStore.layer, S3Store.layer],
] as const;

/** 17 MiB + 5 bytes of non-repeating data: two parts, the second tiny. */
const largeBody = (seed: number): Uint8Array => {
  const out = new Uint8Array(17 * 1024 * 1024 + 5);
  let x = seed;
  for (let i = 0; i < out.length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
};

const sameBytes = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

/** Both adapters on one prefix. */
const pair = (
  primary: (o: S3Store.S3StoreOptions) => Layer.Layer<ObjectStore>,
  other: (o: S3Store.S3StoreOptions) => Layer.Layer<ObjectStore>,
  prefix: string,
) =>
  Effect.gen(function* () {
    const first = yield* Layer.build(primary(storeOptions(env, prefix)));
    const second = yield* Layer.build(other(storeOptions(env, prefix)));
    return [Context.get(first, ObjectStore), Context.get(second, ObjectStore)] as const;
  });

const rawClient = () =>
  Effect.acquireRelease(
    Effect.sync(
      () =>
        new S3Client({
          region: env.region,
          endpoint: env.endpoint,
          forcePathStyle: true,
          requestChecksumCalculation: "WHEN_REQUIRED",
        }),
    ),
    (client) => Effect.sync(() => client.destroy()),
  );

const emptyPrefix = (store: ObjectStoreService) =>
  Effect.flatMap(store.list(""), (objects) =>
    Effect.forEach(objects, (object) => store.delete(object.key), { discard: true }),
  );

describe.each(adapters)("large bodies through the %s adapter", (name, primary, other) => {
  it.scopedLive(
    "multipart upload: bytes, ETag, metadata, cross-client If-Match, nothing left open",
    () =>
      Effect.gen(function* () {
        const prefix = freshPrefix(`large-${name}`);
        const [store, otherStore] = yield* pair(primary, other, prefix);
        yield* Effect.addFinalizer(() => Effect.ignore(emptyPrefix(store)));
        const body = largeBody(7);
        const metadata = {
          size: String(body.length),
          sha256: "ab".repeat(32),
          kind: "checkpoint",
          generation: "3",
        };

        const { etag } = yield* store.put(
          "packs/big.pack",
          body,
          { _tag: "Unconditional" },
          metadata,
        );
        // A multipart ETag names its part count: proof the multipart path ran.
        expect(etag).toMatch(/-2$/);

        const got = yield* otherStore.get("packs/big.pack");
        expect(Option.isSome(got)).toBe(true);
        if (Option.isNone(got)) return;
        expect(got.value.etag).toBe(etag);
        expect(sameBytes(got.value.body, body)).toBe(true);
        expect(yield* store.head("packs/big.pack")).toEqual(
          Option.some({ key: "packs/big.pack", size: body.length, etag }),
        );

        const raw = yield* rawClient();
        const head = yield* Effect.promise(() =>
          raw.send(new HeadObjectCommand({ Bucket: env.bucket, Key: `${prefix}/packs/big.pack` })),
        );
        expect(head.Metadata).toEqual(metadata);
        const uploads = yield* Effect.promise(() =>
          raw.send(new ListMultipartUploadsCommand({ Bucket: env.bucket, Prefix: `${prefix}/` })),
        );
        expect(uploads.Uploads ?? []).toEqual([]);

        // The multipart ETag is a valid If-Match for the other client, and goes stale.
        const replaced = yield* otherStore.put("packs/big.pack", new Uint8Array([1, 2, 3]), {
          _tag: "IfMatch",
          etag,
        });
        const stale = yield* Effect.flip(
          store.put("packs/big.pack", new Uint8Array([4]), { _tag: "IfMatch", etag }),
        );
        expect(stale.reason).toBe("PreconditionFailed");
        expect(Option.map(yield* store.head("packs/big.pack"), (info) => info.etag)).toEqual(
          Option.some(replaced.etag),
        );
      }),
  );

  it.scopedLive("a large conditional create is a single PutObject and keeps its condition", () =>
    Effect.gen(function* () {
      const prefix = freshPrefix(`large-${name}`);
      const [store, otherStore] = yield* pair(primary, other, prefix);
      yield* Effect.addFinalizer(() => Effect.ignore(emptyPrefix(store)));
      const body = largeBody(11);
      const { etag } = yield* store.put("current", body, { _tag: "IfNoneMatch" });
      expect(etag).not.toContain("-");
      const again = yield* Effect.flip(
        otherStore.put("current", largeBody(12), { _tag: "IfNoneMatch" }),
      );
      expect(again.reason).toBe("PreconditionFailed");
      const got = yield* store.get("current");
      expect(Option.map(got, (o) => [o.etag, sameBytes(o.body, body)])).toEqual(
        Option.some([etag, true]),
      );
    }),
  );
});
