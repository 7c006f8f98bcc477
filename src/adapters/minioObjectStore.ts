/**
 * The MinIO ObjectStore adapter (`minio://<bucket>[/<prefix>]`), built on the `minio`
 * client. Same semantics, options, key layout and error mapping as the S3 adapter, so
 * both can share one bucket and prefix; the difference is the HTTP/signing stack (the
 * minio client's own, small and path-style by default).
 *
 * Conditional writes go through `putObject` headers (`If-None-Match: *`, a bare
 * `If-Match: <etag>`), which the client forwards unchanged. Credentials come from the
 * AWS SDK default chain (the same chain as `s3://`), resolved before every request so
 * rotating credentials keep working. The client's own retries are off; bounded
 * timeouts are enforced by a wrapping transport.
 */
import { S3Client } from "@aws-sdk/client-s3";
import { Effect, Layer, Option } from "effect";
import * as http from "node:http";
import * as https from "node:https";
import { Client, S3Error } from "minio";
import {
  ObjectStore,
  putAfterInSequence,
  StoreError,
  type ObjectInfo,
  type ObjectMetadata,
  type ObjectStoreService,
  type PutCondition,
  type StoreErrorReason,
} from "../ports/ObjectStore.js";
import {
  bareEtag,
  byKey,
  defaultConnectTimeoutMs,
  defaultRequestTimeoutMs,
  fromBucketKey,
  isTlsFailure,
  messageOf,
  multipartThreshold,
  parseEndpoint,
  partConcurrency,
  ifMatchValue,
  retryTransient,
  safeToken,
  settleServerError,
  splitParts,
  storeIdentity,
  tlsFailureText,
  toBucketKey,
  unmatchableEtag,
  type RemoteStoreOptions,
} from "./remoteStoreSupport.js";

/** Options of the MinIO adapter; see {@link RemoteStoreOptions}. */
export type MinioStoreOptions = RemoteStoreOptions;

/** What a failed request was, for classifying its failure. */
interface Request {
  readonly operation: string;
  readonly key: string;
  readonly write: boolean;
  readonly ifMatch?: boolean;
}

/** Errno codes set by {@link timedTransport}. */
const connectTimeoutCode = "QUIRE_CONNECT_TIMEOUT";
const requestTimeoutCode = "QUIRE_REQUEST_TIMEOUT";

const notSentCodes = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  connectTimeoutCode,
]);
const accessDeniedCodes = new Set([
  "AccessDenied",
  "Forbidden",
  "InvalidAccessKeyId",
  "SignatureDoesNotMatch",
  "ExpiredToken",
  "InvalidToken",
  "TokenRefreshRequired",
]);
const throttledCodes = new Set([
  "SlowDown",
  "Throttling",
  "RequestLimitExceeded",
  "TooManyRequests",
]);
/** minio-js validation errors, thrown before anything is sent. */
const clientSideNames = new Set([
  "InvalidArgumentError",
  "InvalidBucketNameError",
  "InvalidObjectNameError",
  "InvalidEndpointError",
  "InvalidPortError",
  "TypeError",
]);

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null && key in value ? Reflect.get(value, key) : undefined;

/** A classified failure: the port error, and whether the server answered with a 5xx (it finished processing). */
interface Mapped {
  readonly error: StoreError;
  readonly serverError: boolean;
}

/**
 * The single classification of every failure of a minio request into the port's
 * closed set. minio-js turns retryable HTTP statuses into a plain Error naming the
 * status (its retries are off here) and S3 error bodies into `S3Error` with `code`;
 * the AWS SDK credential chain fails with `CredentialsProviderError`. Messages carry
 * only the operation, the port key and sanitized tokens.
 */
const mapError = (error: unknown, request: Request): Mapped => {
  const rawMessage = field(error, "message");
  const message = typeof rawMessage === "string" ? rawMessage : "";
  const s3Code = error instanceof S3Error ? safeToken(error.code) : undefined;
  const errno = safeToken(field(error, "code")) ?? safeToken(field(field(error, "cause"), "code"));
  const name = safeToken(field(error, "name"));
  const statusMatch = /Retryable HTTP status: (\d{3})/.exec(message);
  const status = statusMatch?.[1] === undefined ? undefined : Number(statusMatch[1]);
  const detail = [
    s3Code ?? (error instanceof S3Error ? undefined : errno),
    status === undefined ? undefined : `HTTP ${status}`,
  ]
    .filter((part) => part !== undefined)
    .join(", ");
  const fail = (reason: StoreErrorReason, what: string, serverError = false): Mapped => ({
    error: new StoreError({
      reason,
      message: `MinIO ${request.operation} ${request.key}: ${what}${detail === "" ? "" : ` (${detail})`}`,
    }),
    serverError,
  });
  const lost = request.write ? "Ambiguous" : "Unavailable";

  if (error instanceof S3Error) {
    if (s3Code === "PreconditionFailed" || s3Code === "ConditionalRequestConflict") {
      return fail("PreconditionFailed", "condition not met");
    }
    if (s3Code === "NoSuchBucket") return fail("BucketMissing", "the bucket does not exist");
    if (s3Code === "NoSuchKey" || s3Code === "NotFound") {
      return request.ifMatch === true
        ? fail("PreconditionFailed", "no object to replace")
        : fail("NotFound", "not found");
    }
    if (s3Code !== undefined && accessDeniedCodes.has(s3Code))
      return fail("AccessDenied", "access denied");
    if (s3Code !== undefined && throttledCodes.has(s3Code))
      return fail("Throttled", "the store asked us to slow down");
    // An S3 error answer (not a 5xx, those arrive as retryable statuses) is proof of no effect.
    return fail("Unavailable", "the store rejected the request");
  }
  if (status !== undefined) {
    if (status === 503 || status === 429)
      return fail("Throttled", "the store asked us to slow down");
    return fail(lost, "the store failed while handling the request", status >= 500);
  }
  if (name === "CredentialsProviderError")
    return fail("AccessDenied", "no credentials could be resolved");
  if (isTlsFailure(errno, [message, messageOf(field(error, "cause"))], request.write))
    return fail("TlsFailed", tlsFailureText);
  if (errno !== undefined && notSentCodes.has(errno))
    return fail("Unavailable", "the store could not be reached");
  if (name !== undefined && clientSideNames.has(name))
    return fail("Unavailable", "the request was refused by the client");
  if (
    errno === requestTimeoutCode ||
    errno === "ECONNRESET" ||
    errno === "EPIPE" ||
    errno === "ETIMEDOUT"
  ) {
    return fail(lost, "no answer: timed out or the connection was reset");
  }
  return fail(lost, "the request failed");
};

/**
 * An http(s) transport whose requests are bounded: `connectMs` to get a connected
 * socket, `requestMs` for the whole exchange including the response body. minio-js
 * itself has no timeouts.
 */
const timedTransport = (secure: boolean, connectMs: number, requestMs: number) => {
  const base = secure ? https : http;
  const bound = (request: http.ClientRequest): http.ClientRequest => {
    const abort = (code: string, what: string) => () =>
      request.destroy(
        Object.assign(
          new Error(`${what} after ${code === connectTimeoutCode ? connectMs : requestMs} ms`),
          { code },
        ),
      );
    const whole = setTimeout(abort(requestTimeoutCode, "request timed out"), requestMs);
    request.once("socket", (socket) => {
      if (!socket.connecting) return;
      const connect = setTimeout(abort(connectTimeoutCode, "connect timed out"), connectMs);
      socket.once("connect", () => clearTimeout(connect));
      request.once("close", () => clearTimeout(connect));
    });
    request.once("close", () => clearTimeout(whole));
    return request;
  };
  function request(
    options: http.RequestOptions | string | URL,
    callback?: (res: http.IncomingMessage) => void,
  ): http.ClientRequest;
  function request(
    url: string | URL,
    options: http.RequestOptions,
    callback?: (res: http.IncomingMessage) => void,
  ): http.ClientRequest;
  function request(
    first: http.RequestOptions | string | URL,
    second?: http.RequestOptions | ((res: http.IncomingMessage) => void),
    third?: (res: http.IncomingMessage) => void,
  ): http.ClientRequest {
    if (typeof second === "function" || second === undefined)
      return bound(base.request(first, second));
    if (typeof first === "object" && !(first instanceof URL))
      return bound(base.request(first, third));
    return bound(base.request(first, second, third));
  }
  return { request };
};

/** User metadata as explicit `x-amz-meta-*` headers, so no key can be taken for a real header. */
const metadataHeaders = (metadata: ObjectMetadata | undefined): Record<string, string> =>
  Object.fromEntries(
    Object.entries(metadata ?? {}).map(([name, value]) => [
      `x-amz-meta-${name.toLowerCase()}`,
      value,
    ]),
  );

const asBuffer = (bytes: Uint8Array): Buffer =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/**
 * The MinIO adapter's service. `withClient` runs a request on a client signed with
 * freshly resolved credentials.
 */
const makeService = (
  withClient: <A>(run: (client: Client) => Promise<A>) => Promise<A>,
  options: MinioStoreOptions,
): ObjectStoreService => {
  const bucket = options.bucket;
  const identity = storeIdentity("minio", options);
  const keyOf = (key: string) => toBucketKey(options.prefix, key);

  const call = <A>(
    request: Request,
    run: (client: Client) => Promise<A>,
  ): Effect.Effect<A, StoreError> =>
    Effect.tryPromise({
      try: () => withClient(run),
      catch: (error) => mapError(error, request).error,
    });

  const get: ObjectStoreService["get"] = (key) =>
    call({ operation: "GetObject", key, write: false }, async (client) => {
      const stream = await client.getObject(bucket, keyOf(key));
      const headers = field(stream, "headers");
      const etag = field(headers, "etag");
      const length = field(headers, "content-length");
      const body = new Uint8Array(Buffer.concat(await stream.toArray()));
      return { body, etag: bareEtag(typeof etag === "string" ? etag : undefined), length };
    }).pipe(
      Effect.flatMap(({ body, etag, length }) =>
        etag === undefined
          ? Effect.fail(
              new StoreError({
                reason: "Corrupt",
                message: `MinIO GetObject ${key}: the answer has no ETag`,
              }),
            )
          : typeof length === "string" && Number(length) !== body.length
            ? Effect.fail(
                new StoreError({
                  reason: "Corrupt",
                  message: `MinIO GetObject ${key}: truncated body`,
                }),
              )
            : Effect.succeed(Option.some({ body, etag })),
      ),
      Effect.catchIf(
        (error) => error.reason === "NotFound",
        () => Effect.succeed(Option.none()),
      ),
      retryTransient,
    );

  const head: ObjectStoreService["head"] = (key) =>
    call({ operation: "HeadObject", key, write: false }, (client) =>
      client.statObject(bucket, keyOf(key)),
    ).pipe(
      Effect.flatMap((stat) => {
        const etag = bareEtag(stat.etag);
        return etag === undefined || !Number.isSafeInteger(stat.size)
          ? Effect.fail(
              new StoreError({
                reason: "Corrupt",
                message: `MinIO HeadObject ${key}: no ETag or size`,
              }),
            )
          : Effect.succeed(Option.some<ObjectInfo>({ key, size: stat.size, etag }));
      }),
      Effect.catchIf(
        (error) => error.reason === "NotFound",
        () => Effect.succeed(Option.none()),
      ),
      retryTransient,
    );

  const putOnce = (
    key: string,
    body: Uint8Array,
    condition: PutCondition,
    metadata: ObjectMetadata | undefined,
  ): Effect.Effect<{ readonly etag: string }, StoreError> => {
    const ifMatch = condition._tag === "IfMatch" ? ifMatchValue(condition.etag) : undefined;
    if (condition._tag === "IfMatch" && ifMatch === undefined) {
      return Effect.fail(unmatchableEtag("MinIO", key));
    }
    const request: Request = {
      operation: "PutObject",
      key,
      write: true,
      ifMatch: ifMatch !== undefined,
    };
    return Effect.tryPromise({
      try: () =>
        withClient((client) =>
          client.putObject(bucket, keyOf(key), asBuffer(body), body.length, {
            ...metadataHeaders(metadata),
            ...(condition._tag === "IfNoneMatch" ? { "If-None-Match": "*" } : {}),
            ...(ifMatch === undefined ? {} : { "If-Match": ifMatch }),
          }),
        ),
      catch: (error) => mapError(error, request),
    }).pipe(
      Effect.flatMap((answer) => {
        const etag = bareEtag(answer.etag);
        return etag === undefined
          ? Effect.fail<Mapped>({
              // The write took effect, but an answer without its ETag cannot be used:
              // Ambiguous, so that the caller settles it by reading (a publication that
              // landed is then found), as for a lost response.
              error: new StoreError({
                reason: "Ambiguous",
                message: `MinIO PutObject ${key}: the answer has no ETag`,
                answeredWithoutEtag: true,
              }),
              serverError: false,
            })
          : Effect.succeed({ etag });
      }),
      Effect.catchAll(({ error, serverError }) =>
        serverError && condition._tag !== "Unconditional"
          ? settleServerError(get, key, body, condition, error)
          : Effect.fail(error),
      ),
      retryTransient,
    );
  };

  /** Same contract as the S3 adapter's multipart path: abort on failure, HEAD for the real ETag. */
  const putMultipart = (key: string, body: Uint8Array, metadata: ObjectMetadata | undefined) =>
    Effect.gen(function* () {
      const uploadId = yield* call(
        { operation: "CreateMultipartUpload", key, write: false },
        (client) =>
          client.initiateNewMultipartUpload(bucket, keyOf(key), metadataHeaders(metadata)),
      ).pipe(retryTransient);
      const abort = call({ operation: "AbortMultipartUpload", key, write: false }, (client) =>
        client.abortMultipartUpload(bucket, keyOf(key), uploadId),
      );
      const upload = Effect.gen(function* () {
        const parts = yield* Effect.forEach(
          splitParts(body),
          (part, index) =>
            call({ operation: "UploadPart", key, write: false }, (client) =>
              client.uploadPart(
                {
                  bucketName: bucket,
                  objectName: keyOf(key),
                  uploadID: uploadId,
                  partNumber: index + 1,
                  headers: { "Content-Length": part.length },
                },
                asBuffer(part),
              ),
            ).pipe(
              retryTransient,
              Effect.map((answer) => ({ part: index + 1, etag: answer.etag })),
            ),
          { concurrency: partConcurrency },
        );
        yield* call({ operation: "CompleteMultipartUpload", key, write: true }, (client) =>
          client.completeMultipartUpload(bucket, keyOf(key), uploadId, parts),
        );
      });
      yield* upload.pipe(Effect.onError(() => Effect.ignore(abort)));
      const info = yield* head(key).pipe(
        Effect.mapError(
          (error) =>
            new StoreError({
              reason: "Ambiguous",
              message: `MinIO CompleteMultipartUpload ${key}: completed but its ETag could not be read: ${error.message}`,
            }),
        ),
      );
      if (Option.isNone(info)) {
        return yield* new StoreError({
          reason: "Ambiguous",
          message: `MinIO CompleteMultipartUpload ${key}: completed but the object is not visible`,
        });
      }
      return { etag: info.value.etag };
    });

  const put: ObjectStoreService["put"] = (key, body, condition, metadata) =>
    condition._tag === "Unconditional" && body.length > multipartThreshold
      ? putMultipart(key, body, metadata)
      : putOnce(key, body, condition, metadata);

  const remove: ObjectStoreService["delete"] = (key) =>
    call({ operation: "DeleteObject", key, write: true }, (client) =>
      client.removeObject(bucket, keyOf(key)),
    ).pipe(
      Effect.catchIf(
        (error) => error.reason === "NotFound",
        () => Effect.void,
      ),
      retryTransient,
    );

  const list: ObjectStoreService["list"] = (prefix) =>
    Effect.gen(function* () {
      const found: Array<ObjectInfo> = [];
      let token = "";
      for (;;) {
        const continuation = token;
        const page = yield* call(
          { operation: "ListObjectsV2", key: prefix, write: false },
          (client) =>
            client.listObjectsV2Query(
              bucket,
              toBucketKey(options.prefix, prefix),
              continuation,
              "",
              1000,
              "",
            ),
        ).pipe(retryTransient);
        for (const item of page.objects) {
          const key =
            item.name === undefined ? undefined : fromBucketKey(options.prefix, item.name);
          const etag = bareEtag(item.etag);
          if (key !== undefined && etag !== undefined) found.push({ key, size: item.size, etag });
        }
        if (!page.isTruncated || page.nextContinuationToken === "") break;
        token = page.nextContinuationToken;
      }
      return found.sort(byKey);
    });

  // Nothing to stage: the request itself is the write.
  const putAfter = putAfterInSequence(put);

  return { identity, get, head, put, putAfter, delete: remove, list };
};

/** A service whose every request fails with `reason`, for an unusable configuration. */
const refusingService = (options: MinioStoreOptions, what: string): ObjectStoreService => {
  const refuse = new StoreError({ reason: "Unavailable", message: `MinIO: ${what}` });
  return {
    identity: storeIdentity("minio", options),
    get: () => Effect.fail(refuse),
    head: () => Effect.fail(refuse),
    put: () => Effect.fail(refuse),
    putAfter: () => Effect.fail(refuse),
    delete: () => Effect.fail(refuse),
    list: () => Effect.fail(refuse),
  };
};

/**
 * The MinIO ObjectStore layer. Without an endpoint it talks to AWS S3
 * (`s3.<region>.amazonaws.com`, TLS). Each request is signed by a fresh, cheap minio
 * client built from credentials the AWS SDK chain resolves (and caches, refreshing
 * them before expiry); all clients share one connection pool, closed when the layer's
 * scope closes. Never fails to build: an unusable endpoint makes every request fail
 * with `Unavailable`.
 */
export const layer = (options: MinioStoreOptions): Layer.Layer<ObjectStore> =>
  Layer.scoped(
    ObjectStore,
    Effect.gen(function* () {
      const endpoint = parseEndpoint(options.endpoint ?? "https://s3.amazonaws.com");
      if (endpoint === undefined) {
        return refusingService(options, "the configured endpoint is not an absolute http(s) URL");
      }
      const secure = endpoint.protocol === "https:";
      const agent = yield* Effect.acquireRelease(
        Effect.sync(() =>
          secure ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true }),
        ),
        (agent) => Effect.sync(() => agent.destroy()),
      );
      // Used only for its credential chain; this client never sends a request.
      const sdk = yield* Effect.acquireRelease(
        Effect.sync(() => new S3Client({ region: options.region })),
        (sdk) => Effect.sync(() => sdk.destroy()),
      );
      const transport = timedTransport(
        secure,
        options.connectTimeoutMs ?? defaultConnectTimeoutMs,
        options.requestTimeoutMs ?? defaultRequestTimeoutMs,
      );
      const withClient = async <A>(run: (client: Client) => Promise<A>): Promise<A> => {
        const credentials = await sdk.config.credentials();
        const client = new Client({
          endPoint: endpoint.hostname.replace(/^\[(.*)\]$/, "$1"),
          ...(endpoint.port === "" ? {} : { port: Number(endpoint.port) }),
          useSSL: secure,
          region: options.region,
          pathStyle: options.forcePathStyle,
          accessKey: credentials.accessKeyId,
          secretKey: credentials.secretAccessKey,
          ...(credentials.sessionToken === undefined
            ? {}
            : { sessionToken: credentials.sessionToken }),
          transport,
          transportAgent: agent,
          retryOptions: { disableRetry: true },
        });
        return run(client);
      };
      return makeService(withClient, options);
    }),
  );
