/**
 * The S3 ObjectStore adapter (`s3://<bucket>[/<prefix>]`), built on
 * `@aws-sdk/client-s3`. Works against AWS S3 and S3-compatible services (Ceph RGW,
 * MinIO, …) given an endpoint and path-style addressing. Credentials come only from
 * the AWS SDK default chain.
 *
 * Publication safety rests on conditional PutObject only: `If-None-Match: *` to create
 * and a bare `If-Match: <etag>` to replace (RGW rejects the quoted form; AWS accepts
 * both). Conditions on CompleteMultipartUpload, CopyObject and DeleteObject are not
 * trusted (RGW ignores them), so multipart is used only for unconditional puts, i.e.
 * immutable packs under unique keys.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
  type ListObjectsV2CommandOutput,
} from "@aws-sdk/client-s3";
import { Effect, Layer, Option } from "effect";
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

/** Options of the S3 adapter; see {@link RemoteStoreOptions}. */
export type S3StoreOptions = RemoteStoreOptions;

/** What a failed request was, for classifying its failure. */
interface Request {
  /** The S3 operation name, for messages. */
  readonly operation: string;
  /** The port key (never the bucket key, never credentials). */
  readonly key: string;
  /** Whether the request may change the store: decides Ambiguous vs Unavailable. */
  readonly write: boolean;
  /** Whether this is an `If-Match` put: a missing key then means a lost condition. */
  readonly ifMatch?: boolean;
}

/** Errno codes proving the request never reached the server. */
const notSentCodes = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
]);
const accessDeniedNames = new Set([
  "AccessDenied",
  "Forbidden",
  "InvalidAccessKeyId",
  "SignatureDoesNotMatch",
  "ExpiredToken",
  "InvalidToken",
  "TokenRefreshRequired",
  "CredentialsProviderError",
]);
const throttledNames = new Set([
  "SlowDown",
  "Throttling",
  "ThrottlingException",
  "RequestLimitExceeded",
  "TooManyRequests",
]);

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null && key in value ? Reflect.get(value, key) : undefined;

/** A classified failure: the port error, and whether the server answered with a 5xx (it finished processing). */
interface Mapped {
  readonly error: StoreError;
  readonly serverError: boolean;
}

/**
 * The single classification of every failure of an S3 request (SDK exceptions, node
 * errno errors, timeouts) into the port's closed set. Messages are built from the
 * operation, the port key and sanitized vendor tokens only, never from vendor text.
 */
const mapError = (error: unknown, request: Request): Mapped => {
  const status = error instanceof S3ServiceException ? error.$metadata.httpStatusCode : undefined;
  const name = safeToken(field(error, "name"));
  const code = safeToken(field(error, "code")) ?? safeToken(field(field(error, "cause"), "code"));
  const rawMessage = field(error, "message");
  const message = typeof rawMessage === "string" ? rawMessage : "";
  const detail = [name, code, status === undefined ? undefined : `HTTP ${status}`]
    .filter((part) => part !== undefined)
    .join(", ");
  const fail = (reason: StoreErrorReason, what: string, serverError = false): Mapped => ({
    error: new StoreError({
      reason,
      message: `S3 ${request.operation} ${request.key}: ${what}${detail === "" ? "" : ` (${detail})`}`,
    }),
    serverError,
  });
  const lost = request.write ? "Ambiguous" : "Unavailable";

  if (status === 412 || name === "PreconditionFailed" || name === "ConditionalRequestConflict") {
    return fail("PreconditionFailed", "condition not met");
  }
  if (name === "NoSuchBucket") return fail("BucketMissing", "the bucket does not exist");
  if (name === "NoSuchKey" || name === "NotFound" || status === 404) {
    return request.ifMatch === true
      ? fail("PreconditionFailed", "no object to replace")
      : fail("NotFound", "not found");
  }
  if (status === 403 || (name !== undefined && accessDeniedNames.has(name))) {
    return fail("AccessDenied", "access denied");
  }
  if (status === 503 || status === 429 || (name !== undefined && throttledNames.has(name))) {
    return fail("Throttled", "the store asked us to slow down");
  }
  if (status !== undefined && status >= 500) {
    return fail(lost, "the store failed while handling the request", true);
  }
  if (status !== undefined) return fail("Unavailable", "the store rejected the request");
  if (isTlsFailure(code, [message, messageOf(field(error, "cause"))], request.write))
    return fail("TlsFailed", tlsFailureText);
  if (code !== undefined && notSentCodes.has(code))
    return fail("Unavailable", "the store could not be reached");
  if (message.includes("did not establish a connection"))
    return fail("Unavailable", "connecting timed out");
  if (
    name === "TimeoutError" ||
    code === "ECONNRESET" ||
    code === "EPIPE" ||
    code === "ETIMEDOUT"
  ) {
    return fail(lost, "no answer: timed out or the connection was reset");
  }
  return fail(lost, "the request failed");
};

/** The S3 adapter's service over one client. */
const makeService = (client: S3Client, options: S3StoreOptions): ObjectStoreService => {
  const bucket = options.bucket;
  const identity = storeIdentity("s3", options);
  const keyOf = (key: string) => toBucketKey(options.prefix, key);

  const call = <A>(
    request: Request,
    run: (signal: AbortSignal) => Promise<A>,
  ): Effect.Effect<A, StoreError> =>
    Effect.tryPromise({ try: run, catch: (error) => mapError(error, request).error });

  const get: ObjectStoreService["get"] = (key) => {
    const request: Request = { operation: "GetObject", key, write: false };
    return call(request, async (abortSignal) => {
      const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: keyOf(key) }), {
        abortSignal,
      });
      const body =
        answer.Body === undefined ? new Uint8Array() : await answer.Body.transformToByteArray();
      return { body, etag: bareEtag(answer.ETag), length: answer.ContentLength };
    }).pipe(
      Effect.flatMap(({ body, etag, length }) =>
        etag === undefined
          ? Effect.fail(
              new StoreError({
                reason: "Corrupt",
                message: `S3 GetObject ${key}: the answer has no ETag`,
              }),
            )
          : length !== undefined && length !== body.length
            ? Effect.fail(
                new StoreError({
                  reason: "Corrupt",
                  message: `S3 GetObject ${key}: truncated body`,
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
  };

  const head: ObjectStoreService["head"] = (key) =>
    call({ operation: "HeadObject", key, write: false }, (abortSignal) =>
      client.send(new HeadObjectCommand({ Bucket: bucket, Key: keyOf(key) }), { abortSignal }),
    ).pipe(
      Effect.flatMap((answer) => {
        const etag = bareEtag(answer.ETag);
        return etag === undefined || answer.ContentLength === undefined
          ? Effect.fail(
              new StoreError({
                reason: "Corrupt",
                message: `S3 HeadObject ${key}: no ETag or size`,
              }),
            )
          : Effect.succeed(Option.some<ObjectInfo>({ key, size: answer.ContentLength, etag }));
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
      return Effect.fail(unmatchableEtag("S3", key));
    }
    const request: Request = {
      operation: "PutObject",
      key,
      write: true,
      ifMatch: ifMatch !== undefined,
    };
    return Effect.tryPromise({
      try: (abortSignal) =>
        client.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: keyOf(key),
            Body: body,
            ContentLength: body.length,
            ...(metadata === undefined ? {} : { Metadata: { ...metadata } }),
            ...(condition._tag === "IfNoneMatch" ? { IfNoneMatch: "*" } : {}),
            ...(ifMatch === undefined ? {} : { IfMatch: ifMatch }),
          }),
          { abortSignal },
        ),
      catch: (error) => mapError(error, request),
    }).pipe(
      Effect.flatMap((answer) => {
        const etag = bareEtag(answer.ETag);
        return etag === undefined
          ? Effect.fail<Mapped>({
              // The write took effect, but an answer without its ETag cannot be used:
              // Ambiguous, so that the caller settles it by reading (a publication that
              // landed is then found), as for a lost response.
              error: new StoreError({
                reason: "Ambiguous",
                message: `S3 PutObject ${key}: the answer has no ETag`,
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

  /**
   * Uploads in parts and completes; aborts the upload on any failure. Until Complete
   * is sent nothing is visible under the key, so an ambiguous part is a plain
   * failure; only an ambiguous Complete stays Ambiguous.
   */
  const putMultipart = (key: string, body: Uint8Array, metadata: ObjectMetadata | undefined) =>
    Effect.gen(function* () {
      const created = yield* call(
        { operation: "CreateMultipartUpload", key, write: false },
        (abortSignal) =>
          client.send(
            new CreateMultipartUploadCommand({
              Bucket: bucket,
              Key: keyOf(key),
              ...(metadata === undefined ? {} : { Metadata: { ...metadata } }),
            }),
            { abortSignal },
          ),
      ).pipe(retryTransient);
      const uploadId = created.UploadId;
      if (uploadId === undefined) {
        return yield* new StoreError({
          reason: "Corrupt",
          message: `S3 CreateMultipartUpload ${key}: no upload id`,
        });
      }
      const abort = call({ operation: "AbortMultipartUpload", key, write: false }, (abortSignal) =>
        client.send(
          new AbortMultipartUploadCommand({ Bucket: bucket, Key: keyOf(key), UploadId: uploadId }),
          {
            abortSignal,
          },
        ),
      );
      const upload = Effect.gen(function* () {
        const parts = yield* Effect.forEach(
          splitParts(body),
          (part, index) =>
            call({ operation: "UploadPart", key, write: false }, (abortSignal) =>
              client.send(
                new UploadPartCommand({
                  Bucket: bucket,
                  Key: keyOf(key),
                  UploadId: uploadId,
                  PartNumber: index + 1,
                  Body: part,
                  ContentLength: part.length,
                }),
                { abortSignal },
              ),
            ).pipe(
              retryTransient,
              Effect.flatMap((answer) =>
                answer.ETag === undefined
                  ? Effect.fail(
                      new StoreError({
                        reason: "Corrupt",
                        message: `S3 UploadPart ${key}: no ETag`,
                      }),
                    )
                  : Effect.succeed({ ETag: answer.ETag, PartNumber: index + 1 }),
              ),
            ),
          { concurrency: partConcurrency },
        );
        yield* call({ operation: "CompleteMultipartUpload", key, write: true }, (abortSignal) =>
          client.send(
            new CompleteMultipartUploadCommand({
              Bucket: bucket,
              Key: keyOf(key),
              UploadId: uploadId,
              MultipartUpload: { Parts: parts },
            }),
            { abortSignal },
          ),
        );
      });
      yield* upload.pipe(Effect.onError(() => Effect.ignore(abort)));
      // RGW answers Complete with an empty ETag; HEAD has the real one.
      const info = yield* head(key).pipe(
        Effect.mapError(
          (error) =>
            new StoreError({
              reason: "Ambiguous",
              message: `S3 CompleteMultipartUpload ${key}: completed but its ETag could not be read: ${error.message}`,
            }),
        ),
      );
      if (Option.isNone(info)) {
        return yield* new StoreError({
          reason: "Ambiguous",
          message: `S3 CompleteMultipartUpload ${key}: completed but the object is not visible`,
        });
      }
      return { etag: info.value.etag };
    });

  const put: ObjectStoreService["put"] = (key, body, condition, metadata) =>
    condition._tag === "Unconditional" && body.length > multipartThreshold
      ? putMultipart(key, body, metadata)
      : putOnce(key, body, condition, metadata);

  const remove: ObjectStoreService["delete"] = (key) =>
    call({ operation: "DeleteObject", key, write: true }, (abortSignal) =>
      client.send(new DeleteObjectCommand({ Bucket: bucket, Key: keyOf(key) }), { abortSignal }),
    ).pipe(
      Effect.asVoid,
      Effect.catchIf(
        (error) => error.reason === "NotFound",
        () => Effect.void,
      ),
      retryTransient,
    );

  const list: ObjectStoreService["list"] = (prefix) =>
    Effect.gen(function* () {
      const found: Array<ObjectInfo> = [];
      let token: string | undefined = undefined;
      do {
        const continuation: string | undefined = token;
        const page: ListObjectsV2CommandOutput = yield* call(
          { operation: "ListObjectsV2", key: prefix, write: false },
          (abortSignal) =>
            client.send(
              new ListObjectsV2Command({
                Bucket: bucket,
                Prefix: toBucketKey(options.prefix, prefix),
                ...(continuation === undefined ? {} : { ContinuationToken: continuation }),
              }),
              { abortSignal },
            ),
        ).pipe(retryTransient);
        for (const item of page.Contents ?? []) {
          const key = item.Key === undefined ? undefined : fromBucketKey(options.prefix, item.Key);
          const etag = bareEtag(item.ETag);
          if (key !== undefined && etag !== undefined && item.Size !== undefined) {
            found.push({ key, size: item.Size, etag });
          }
        }
        token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
      } while (token !== undefined);
      return found.sort(byKey);
    });

  // Nothing to stage: the request itself is the write.
  const putAfter = putAfterInSequence(put);

  return { identity, get, head, put, putAfter, delete: remove, list };
};

/** A service whose every request fails: the configured endpoint is not an http(s) URL. */
const invalidEndpointService = (options: S3StoreOptions): ObjectStoreService => {
  const refuse = new StoreError({
    reason: "Unavailable",
    message: "S3: the configured endpoint is not an absolute http(s) URL",
  });
  return {
    identity: storeIdentity("s3", options),
    get: () => Effect.fail(refuse),
    head: () => Effect.fail(refuse),
    put: () => Effect.fail(refuse),
    putAfter: () => Effect.fail(refuse),
    delete: () => Effect.fail(refuse),
    list: () => Effect.fail(refuse),
  };
};

/**
 * The S3 ObjectStore layer. The client is destroyed (sockets closed) when the layer's
 * scope closes. Requests are bounded by `connectTimeoutMs` and `requestTimeoutMs`;
 * the SDK's own retries are off (a transparent resend of a conditional write could
 * report our own success as a lost race) and failures proven to have had no effect
 * are retried here instead. Never fails to build: an unusable endpoint makes every
 * request fail with `Unavailable`.
 */
export const layer = (options: S3StoreOptions): Layer.Layer<ObjectStore> =>
  Layer.scoped(
    ObjectStore,
    Effect.gen(function* () {
      const endpoint = options.endpoint === undefined ? undefined : parseEndpoint(options.endpoint);
      if (options.endpoint !== undefined && endpoint === undefined)
        return invalidEndpointService(options);
      const client = yield* Effect.acquireRelease(
        Effect.sync(
          () =>
            new S3Client({
              region: options.region,
              forcePathStyle: options.forcePathStyle,
              ...(endpoint === undefined ? {} : { endpoint: endpoint.toString() }),
              // The endpoint comes from our options only, so the identity names the real store.
              ignoreConfiguredEndpointUrls: true,
              requestChecksumCalculation: "WHEN_REQUIRED",
              responseChecksumValidation: "WHEN_REQUIRED",
              maxAttempts: 1,
              requestHandler: {
                connectionTimeout: options.connectTimeoutMs ?? defaultConnectTimeoutMs,
                requestTimeout: options.requestTimeoutMs ?? defaultRequestTimeoutMs,
                throwOnRequestTimeout: true,
              },
            }),
        ),
        (client) => Effect.sync(() => client.destroy()),
      );
      return makeService(client, options);
    }),
  );
