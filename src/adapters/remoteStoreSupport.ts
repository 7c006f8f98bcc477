/**
 * What the two network ObjectStore adapters (S3 via the AWS SDK, MinIO via the minio
 * client) share: the options shape, key prefixing, ETag normalisation, redacted
 * identities, timeouts and the retry policy. Keeping these in one place is what
 * makes `s3://` and `minio://` behave identically on the same bucket.
 */
import { Effect, Option, Schedule } from "effect";
import {
  StoreError,
  type ObjectInfo,
  type PutCondition,
  type StoredObject,
} from "../ports/ObjectStore.js";
import { compareKeys } from "./keyOrder.js";

/**
 * Options of a network object store adapter. Credentials are deliberately absent:
 * they come only from the AWS SDK default chain (environment, shared config files,
 * SSO, web identity, container/instance metadata), never from flags or options.
 */
export interface RemoteStoreOptions {
  /** The bucket name. */
  readonly bucket: string;
  /** `""` or a key prefix such as `a/b`, without leading or trailing slash. */
  readonly prefix: string;
  /** An absolute http(s) endpoint for S3-compatible services; AWS S3 when absent. */
  readonly endpoint?: string;
  /** The signing region (e.g. `us-east-1`). */
  readonly region: string;
  /** Path-style addressing (`<endpoint>/<bucket>/<key>`), needed by most non-AWS stores. */
  readonly forcePathStyle: boolean;
  /** Whole-request bound (send + answer + body), default {@link defaultRequestTimeoutMs}. */
  readonly requestTimeoutMs?: number;
  /** TCP/TLS connect bound, default {@link defaultConnectTimeoutMs}. */
  readonly connectTimeoutMs?: number;
}

/** Default bound on establishing a connection. */
export const defaultConnectTimeoutMs = 5_000;
/** Default bound on one whole request, including a body of up to one part. */
export const defaultRequestTimeoutMs = 20_000;
/** Attempts per operation for failures proven to have had no effect (Unavailable, Throttled). */
export const maxAttempts = 3;
/** Bodies above this size are uploaded in parts when the put is unconditional. */
export const multipartThreshold = 16 * 1024 * 1024;
/** The size of every part but the last of a multipart upload. */
export const partSize = 16 * 1024 * 1024;
/** Parts uploaded at once. */
export const partConcurrency = 4;

/** Maps a port key to the bucket key: `current` → `<prefix>/current`. */
export const toBucketKey = (prefix: string, key: string): string =>
  prefix === "" ? key : `${prefix}/${key}`;

/** Maps a bucket key back to the port key, or `undefined` when it is outside the prefix. */
export const fromBucketKey = (prefix: string, bucketKey: string): string | undefined => {
  if (prefix === "") return bucketKey;
  const head = `${prefix}/`;
  return bucketKey.startsWith(head) ? bucketKey.slice(head.length) : undefined;
};

/**
 * The unquoted form of an ETag as the port carries it. Stores answer `"abc"` (or a weak
 * `W/"abc"`); RGW compares `If-Match` against the bare value, AWS accepts both, so the
 * bare value is the one form that works everywhere.
 */
export const bareEtag = (etag: string | undefined): string | undefined => {
  if (etag === undefined) return undefined;
  const bare = etag.replace(/^W\//, "").replace(/^"(.*)"$/, "$1");
  return bare.length === 0 ? undefined : bare;
};

/**
 * The redacted identity `<scheme>://<bucket>[/<prefix>][@<host[:port]>]`. Only the
 * endpoint's host survives: user-info, path, query and fragment are dropped.
 */
export const storeIdentity = (scheme: string, options: RemoteStoreOptions): string => {
  const base = `${scheme}://${options.bucket}${options.prefix === "" ? "" : `/${options.prefix}`}`;
  if (options.endpoint === undefined) return base;
  const endpoint = parseEndpoint(options.endpoint);
  // The path too: two gateways of one host at different paths are different stores, which
  // must not share a process (app/share) or a working copy's private state.
  return `${base}@${endpoint === undefined ? "invalid-endpoint" : `${endpoint.host}${endpoint.pathname.replace(/\/+$/, "")}`}`;
};

/** The endpoint as a URL without user-info, or `undefined` when it is not an http(s) URL. */
export const parseEndpoint = (endpoint: string): URL | undefined => {
  if (!URL.canParse(endpoint)) return undefined;
  const url = new URL(endpoint);
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  url.username = "";
  url.password = "";
  url.search = "";
  url.hash = "";
  return url;
};

/**
 * A vendor error code or errno made safe to print: short tokens only, so a server
 * cannot smuggle arbitrary text (or an echoed credential) into our messages.
 */
export const safeToken = (value: unknown): string | undefined =>
  typeof value === "string" && /^[A-Za-z0-9_.-]{1,64}$/.test(value) ? value : undefined;

/**
 * Node's certificate verification codes: the TLS handshake reached the server and
 * refused its certificate, before any request was written.
 */
const certificateCodes = new Set([
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_UNTRUSTED",
  "CERT_REVOKED",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
]);

/** The `message` of an error-like `value`, or "" (for matching only, never for printing). */
export const messageOf = (value: unknown): string => {
  const message =
    typeof value === "object" && value !== null && "message" in value
      ? Reflect.get(value, "message")
      : undefined;
  return typeof message === "string" ? message : "";
};

/**
 * OpenSSL's words for a first record from the server that is not TLS at all (a plain
 * HTTP server answering the ClientHello): they can only come from the handshake.
 */
const notTlsAtAll = /wrong version number|unknown protocol|packet length too long/i;

/**
 * Whether a failure with errno-style `code` and `messages` (the error's and its cause's)
 * is a failed TLS handshake, which sent no request: a configuration error, not an outage,
 * never to be retried or reported as a timeout. The certificate codes (Node's and
 * `ERR_TLS_CERT_ALTNAME_INVALID`, a certificate for another host) come only from the
 * handshake. Other TLS failures (`EPROTO`, OpenSSL's `ERR_SSL_*`, Node's `ERR_TLS_*`)
 * can also end a connection that already carried a request (a keep-alive socket, a
 * fatal alert mid-stream): for a `write` they count only when their text shows the
 * server never spoke TLS (an `https://` endpoint on a plain-HTTP port), since a write
 * that may have landed must stay ambiguous.
 */
export const isTlsFailure = (
  code: string | undefined,
  messages: ReadonlyArray<string>,
  write: boolean,
): boolean => {
  if (code === undefined) return false;
  if (certificateCodes.has(code) || code === "ERR_TLS_CERT_ALTNAME_INVALID") return true;
  const tls = code === "EPROTO" || code.startsWith("ERR_SSL_") || code.startsWith("ERR_TLS_");
  return tls && (!write || messages.some((message) => notTlsAtAll.test(message)));
};

/** What a {@link isTlsFailure} failure's message says, for both adapters. */
export const tlsFailureText =
  "the TLS handshake with the endpoint failed: check that an https:// endpoint is a TLS port (use http:// for a plain-HTTP one) and that its certificate is valid and trusted";

/** Orders listed objects by key, byte-wise on UTF-8 as S3 does. */
export const byKey = (a: ObjectInfo, b: ObjectInfo): number => compareKeys(a.key, b.key);

/**
 * Retries an operation whose failures are proven to have had no effect
 * (`Unavailable`, `Throttled`), with exponential backoff from 100 ms, at most
 * {@link maxAttempts} attempts in all. `Ambiguous` is never retried: resending a
 * conditional write whose first attempt may have landed could turn our own success
 * into a false `PreconditionFailed`.
 */
export const retryTransient = <A>(
  effect: Effect.Effect<A, StoreError>,
): Effect.Effect<A, StoreError> =>
  effect.pipe(
    Effect.retry({
      schedule: Schedule.exponential("100 millis"),
      times: maxAttempts - 1,
      while: (error) => error.reason === "Unavailable" || error.reason === "Throttled",
    }),
  );

/** Splits a body into the parts of a multipart upload. */
export const splitParts = (body: Uint8Array): ReadonlyArray<Uint8Array> => {
  const parts: Array<Uint8Array> = [];
  for (let offset = 0; offset < body.length; offset += partSize) {
    parts.push(body.subarray(offset, Math.min(offset + partSize, body.length)));
  }
  return parts;
};

/**
 * The `If-Match` value to send for `etag`, or `undefined` when no object can have that
 * ETag. `*` would match any existing object and an empty value would be dropped (an
 * unconditional write), a `,` would make it a list, so none of them may be sent.
 */
export const ifMatchValue = (etag: string): string | undefined => {
  const bare = bareEtag(etag);
  return bare !== undefined && bare !== "*" && /^[\x21\x23-\x2b\x2d-\x7e]+$/.test(bare)
    ? bare
    : undefined;
};

/** The failure of an `If-Match` put whose ETag cannot match anything (see {@link ifMatchValue}). */
export const unmatchableEtag = (vendor: string, key: string): StoreError =>
  new StoreError({
    reason: "PreconditionFailed",
    message: `${vendor} PutObject ${key}: condition not met (the If-Match ETag matches no object)`,
  });

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean =>
  a.length === b.length &&
  Buffer.from(a.buffer, a.byteOffset, a.length).equals(
    Buffer.from(b.buffer, b.byteOffset, b.length),
  );

/**
 * Settles a conditional put the store answered with a server error (5xx other than
 * 503): the store finished processing, so one read tells what happened. Ceph RGW
 * answers the losers of concurrent `If-Match` replaces this way (HTTP 500
 * `UnknownError`, internally ECANCELED: "object replaced under us", nothing written),
 * where AWS would answer 412 or 409.
 *
 * - the object is exactly as the condition expected (same ETag / still absent) →
 *   nothing changed: `Unavailable`, so the retry policy may resend;
 * - our bytes are current → `Ambiguous`: our write or an identical competing one
 *   landed, and bytes cannot tell which (callers with unique bodies can);
 * - other bytes are current → `PreconditionFailed`: the condition is false now and
 *   a resend could only fail. (Residual risk, documented in docs/s3.md: a store that
 *   applied our write, answered 5xx anyway, and was overwritten by a writer that had
 *   read our version in between.)
 * - the read fails → the original `Ambiguous` error.
 */
export const settleServerError = (
  get: (key: string) => Effect.Effect<Option.Option<StoredObject>, StoreError>,
  key: string,
  body: Uint8Array,
  condition: PutCondition,
  original: StoreError,
): Effect.Effect<never, StoreError> =>
  get(key).pipe(
    Effect.mapError(() => original),
    Effect.flatMap((current) => {
      const unchanged =
        condition._tag === "IfMatch"
          ? Option.isSome(current) && current.value.etag === bareEtag(condition.etag)
          : Option.isNone(current);
      if (unchanged) {
        return Effect.fail(
          new StoreError({
            reason: "Unavailable",
            message: `${original.message}; verified: nothing changed`,
          }),
        );
      }
      if (Option.isSome(current) && sameBytes(current.value.body, body)) {
        return Effect.fail(
          new StoreError({
            reason: "Ambiguous",
            message: `${original.message}; our bytes are current`,
          }),
        );
      }
      return Effect.fail(
        new StoreError({
          reason: "PreconditionFailed",
          message: `${original.message}; verified: a competing write is current`,
        }),
      );
    }),
  );
