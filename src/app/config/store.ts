/**
 * The store part of the configuration: which ObjectStore adapter runs and with what
 * settings, parsed from `--store` / `--bucket` / `--prefix` / `--endpoint` / `--region` /
 * `--path-style` and their environment variables.
 */
import { Either } from "effect";
import { ConfigError } from "./error.js";

/** S3-compatible store settings shared by the `s3` (AWS SDK) and `minio` adapters. */
export interface BucketStoreConfig {
  readonly kind: "s3" | "minio";
  readonly bucket: string;
  /** Key prefix without leading or trailing `/`; `""` for the bucket root. */
  readonly prefix: string;
  /** Normalised absolute http(s) endpoint, absent for the provider default. */
  readonly endpoint?: string;
  readonly region: string;
  readonly forcePathStyle: boolean;
}

/** Which object store to use. */
export type StoreConfig =
  | { readonly kind: "file"; readonly root: string }
  | { readonly kind: "memory" }
  | BucketStoreConfig;

/** A `--store` value before bucket-level settings are merged in. */
export type StoreSpec =
  | { readonly kind: "file"; readonly root: string }
  | { readonly kind: "memory" }
  | { readonly kind: "s3" | "minio"; readonly bucket: string; readonly prefix: string };

const fail = (message: string) => Either.left(new ConfigError({ message }));

/**
 * S3's bucket naming rule (3..63 characters of lowercase letters, digits, `.` and `-`,
 * starting and ending with a letter or digit), which MinIO shares.
 */
const bucketPattern = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** Validates a bucket name; the message names the offending value (bucket names are not secret). */
export const parseBucket = (bucket: string): Either.Either<string, ConfigError> =>
  bucketPattern.test(bucket)
    ? Either.right(bucket)
    : fail(
        `invalid bucket name ${JSON.stringify(bucket)} (3-63 lowercase letters, digits, '.' or '-')`,
      );

const controlCharacters = /[\u0000-\u001f\u007f]/;

/**
 * Normalises a key prefix: strips leading and trailing `/`; rejects empty inner
 * segments, `.`/`..` segments, control characters and prefixes over 512 UTF-8 bytes
 * (S3 keys are at most 1,024 bytes and the notebook needs room below the prefix).
 */
export const parsePrefix = (raw: string): Either.Either<string, ConfigError> => {
  const prefix = raw.replace(/^\/+|\/+$/g, "");
  if (prefix === "") return Either.right("");
  if (controlCharacters.test(prefix)) return fail("the store prefix contains a control character");
  if (new TextEncoder().encode(prefix).length > 512) {
    return fail("the store prefix is longer than 512 bytes");
  }
  const bad = prefix
    .split("/")
    .find((segment) => segment === "" || segment === "." || segment === "..");
  if (bad !== undefined) {
    return fail(`invalid store prefix ${JSON.stringify(prefix)} (empty, '.' or '..' segment)`);
  }
  return Either.right(prefix);
};

/**
 * Parses a `--store` / `QUIRE_STORE` value: `file:<dir>` (also `file:///abs`),
 * `memory:`, `s3://<bucket>[/<prefix>]`, `minio://<bucket>[/<prefix>]`.
 * `resolvePath` turns the file store's directory into an absolute path.
 */
export const parseStoreSpec = (
  value: string,
  resolvePath: (path: string) => string,
): Either.Either<StoreSpec, ConfigError> => {
  if (value === "memory:") return Either.right({ kind: "memory" });
  if (value.startsWith("file:")) {
    let dir = value.slice("file:".length);
    if (dir.startsWith("//")) {
      // file:///abs/dir is the URL spelling; file://host/... names a remote host.
      if (!dir.startsWith("///")) return fail("a file: store URL must not name a host");
      dir = decodeURIComponentSafe(dir.slice(2));
    }
    if (dir === "") return fail("the file: store needs a directory (file:<dir>)");
    if (dir.includes("\u0000")) return fail("the file: store directory contains U+0000");
    // Bytes that are not UTF-8 reach quire as U+FFFD: the path would name another directory.
    if (dir.includes("\ufffd"))
      return fail(
        "the file: store directory contains U+FFFD: its bytes are not UTF-8 (or it holds U+FFFD itself), so quire cannot tell which directory it names; use a UTF-8 name",
      );
    return Either.right({ kind: "file", root: resolvePath(dir) });
  }
  const scheme = value.startsWith("s3://")
    ? "s3"
    : value.startsWith("minio://")
      ? "minio"
      : undefined;
  if (scheme === undefined) {
    return fail(
      "--store must be file:<dir>, memory:, s3://<bucket>[/<prefix>] or minio://<bucket>[/<prefix>]",
    );
  }
  const rest = value.slice(`${scheme}://`.length);
  const slash = rest.indexOf("/");
  const bucketPart = slash === -1 ? rest : rest.slice(0, slash);
  const prefixPart = slash === -1 ? "" : rest.slice(slash + 1);
  return Either.gen(function* () {
    const bucket = yield* parseBucket(bucketPart);
    const prefix = yield* parsePrefix(prefixPart);
    return { kind: scheme, bucket, prefix };
  });
};

const decodeURIComponentSafe = (text: string): string => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};

/**
 * Validates and normalises an S3 endpoint: an absolute `http:` or `https:` URL without
 * user-info, query or fragment. Normal form: lowercase scheme and host, default port
 * dropped, no trailing `/`. The error message never repeats the value, since a
 * rejected endpoint may carry credentials.
 */
export const parseEndpoint = (raw: string): Either.Either<string, ConfigError> => {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return fail("--endpoint must be an absolute http(s) URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return fail("--endpoint must use http or https");
  }
  if (url.username !== "" || url.password !== "" || raw.includes("@")) {
    return fail(
      "--endpoint must not contain user information; pass credentials through the AWS_* environment",
    );
  }
  if (url.search !== "" || raw.includes("?")) return fail("--endpoint must not contain a query");
  if (url.hash !== "" || raw.includes("#")) return fail("--endpoint must not contain a fragment");
  if (url.hostname === "") return fail("--endpoint must name a host");
  const path = url.pathname.replace(/\/+$/, "");
  return Either.right(`${url.protocol}//${url.host}${path}`);
};
