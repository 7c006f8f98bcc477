/**
 * The pack format (docs/storage.md): an immutable object holding either a complete
 * notebook state (checkpoint) or one publication's changes (increment).
 *
 * Layout: the ASCII line `QUIRE-PACK 1\n`, the header's byte length in decimal and
 * `\n`, the header as canonical JSON, then the blob section: the distinct contents
 * concatenated. Entries address blobs by offset and size within the blob section.
 */
import { Either, ParseResult, Schema } from "effect";
import { contentId, encodeText } from "./content.js";
import { compareCodeUnits, isNotebookPath } from "./paths.js";
import { describeIssue } from "./schemaProblem.js";
import { parseStrictJson } from "./strictJson.js";

const magic = "QUIRE-PACK 1\n";

/** Who published, as recorded in an increment. */
export interface PublicationInfo {
  readonly message: string;
  /** ISO-8601 UTC time of the publication attempt. */
  readonly time: string;
  readonly author: { readonly name: string; readonly version: string };
}

/** A file written by the pack: content `id` stored at `offset`/`size` in the blob section. */
export interface PackPut {
  readonly path: string;
  readonly id: string;
  readonly offset: number;
  readonly size: number;
}

/** The parsed header of a pack. */
export interface PackHeader {
  readonly kind: "checkpoint" | "increment";
  /** The manifest generation this pack's state belongs to. */
  readonly generation: number;
  readonly publicationId: string;
  /** The remote generation the publication was merged onto (0 for the first). */
  readonly baseGeneration: number;
  /** Present on publications (increments and the first checkpoint); absent on compactions. */
  readonly publication?: PublicationInfo;
  /** Files written, sorted by path. */
  readonly puts: ReadonlyArray<PackPut>;
  /** Paths deleted (increments only), sorted. */
  readonly deletes: ReadonlyArray<string>;
}

/** A decoded pack: the header and where the blob section starts in the bytes. */
export interface DecodedPack {
  readonly header: PackHeader;
  readonly blobStart: number;
}

/** What a new pack contains. `files` maps path → bytes (a put) or `undefined` (a delete). */
export interface PackContents {
  readonly kind: "checkpoint" | "increment";
  readonly generation: number;
  readonly publicationId: string;
  readonly baseGeneration: number;
  readonly publication?: PublicationInfo;
  readonly files: ReadonlyMap<string, Uint8Array | undefined>;
}

const HeaderShape = Schema.Struct({
  kind: Schema.Literal("checkpoint", "increment"),
  generation: Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1)),
  publicationId: Schema.String,
  baseGeneration: Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(0)),
  publication: Schema.optionalWith(
    Schema.Struct({
      message: Schema.String,
      time: Schema.String,
      author: Schema.Struct({ name: Schema.String, version: Schema.String }),
    }),
    { exact: true },
  ),
  // Each entry is checked by hand below, with its path, id and bounds: a schema per
  // entry cost 45 ms of decoding a 10,000-file checkpoint in a fresh process.
  puts: Schema.Array(Schema.Unknown),
  deletes: Schema.Array(Schema.String),
});
const decodeHeaderShape = ParseResult.decodeUnknownEither(HeaderShape, {
  onExcessProperty: "error",
  errors: "first",
});

/** Encodes a pack; blobs with equal content are stored once. Returns the bytes, the header and where blobs start. */
export const encodePack = (
  contents: PackContents,
): { readonly bytes: Uint8Array; readonly header: PackHeader; readonly blobStart: number } => {
  const paths = [...contents.files.keys()].sort(compareCodeUnits);
  const blobs: Uint8Array[] = [];
  const offsets = new Map<string, number>();
  let blobLength = 0;
  const puts: PackPut[] = [];
  const deletes: string[] = [];
  for (const path of paths) {
    const bytes = contents.files.get(path);
    if (bytes === undefined) {
      deletes.push(path);
      continue;
    }
    const id = contentId(bytes);
    let offset = offsets.get(id);
    if (offset === undefined) {
      offset = blobLength;
      offsets.set(id, offset);
      blobs.push(bytes);
      blobLength += bytes.length;
    }
    puts.push({ path, id, offset, size: bytes.length });
  }
  const header: PackHeader = {
    kind: contents.kind,
    generation: contents.generation,
    publicationId: contents.publicationId,
    baseGeneration: contents.baseGeneration,
    ...(contents.publication === undefined ? {} : { publication: contents.publication }),
    puts,
    deletes,
  };
  const headerBytes = encodeText(
    JSON.stringify({
      kind: header.kind,
      generation: header.generation,
      publicationId: header.publicationId,
      baseGeneration: header.baseGeneration,
      ...(header.publication === undefined
        ? {}
        : {
            publication: {
              message: header.publication.message,
              time: header.publication.time,
              author: {
                name: header.publication.author.name,
                version: header.publication.author.version,
              },
            },
          }),
      puts: puts.map((p) => [p.path, p.id, p.offset, p.size]),
      deletes,
    }),
  );
  const prefix = encodeText(`${magic}${headerBytes.length}\n`);
  const out = new Uint8Array(prefix.length + headerBytes.length + blobLength);
  out.set(prefix, 0);
  out.set(headerBytes, prefix.length);
  let at = prefix.length + headerBytes.length;
  for (const blob of blobs) {
    out.set(blob, at);
    at += blob.length;
  }
  return { bytes: out, header, blobStart: prefix.length + headerBytes.length };
};

const textDecoder = new TextDecoder("utf-8", { fatal: true });

/** Whether a decoded JSON value has the shape of a put entry: `[path, id, offset, size]`. */
const isPutEntry = (entry: unknown): entry is readonly [string, string, number, number] =>
  Array.isArray(entry) &&
  entry.length === 4 &&
  typeof entry[0] === "string" &&
  typeof entry[1] === "string" &&
  typeof entry[2] === "number" &&
  typeof entry[3] === "number";

/**
 * Decodes a pack's header and checks every entry addresses bytes inside the blob
 * section. Does not hash blobs (the pack's SHA-256 was verified against its
 * descriptor before decoding). Returns a problem description on any violation.
 */
export const decodePack = (bytes: Uint8Array): Either.Either<DecodedPack, string> => {
  const magicBytes = encodeText(magic);
  for (let i = 0; i < magicBytes.length; i++) {
    if (bytes[i] !== magicBytes[i]) return Either.left("not a quire pack (bad magic)");
  }
  const lengthEnd = bytes.indexOf(0x0a, magicBytes.length);
  if (lengthEnd < 0 || lengthEnd - magicBytes.length > 12)
    return Either.left("bad header length line");
  const lengthText = textDecoder.decode(bytes.subarray(magicBytes.length, lengthEnd));
  if (!/^[0-9]+$/.test(lengthText)) return Either.left("bad header length");
  const headerLength = Number(lengthText);
  const headerStart = lengthEnd + 1;
  const blobStart = headerStart + headerLength;
  if (blobStart > bytes.length) return Either.left("header runs past the end of the pack");
  let headerText: string;
  try {
    headerText = textDecoder.decode(bytes.subarray(headerStart, blobStart));
  } catch {
    return Either.left("header is not UTF-8");
  }
  const parsed = parseStrictJson(headerText);
  if (!parsed.ok) return Either.left(`header: ${parsed.problem}`);
  const shaped = decodeHeaderShape(parsed.value);
  if (Either.isLeft(shaped)) {
    return Either.left(`header: ${describeIssue(shaped.left)}`);
  }
  const raw = shaped.right;
  const blobLength = bytes.length - blobStart;
  const puts: PackPut[] = [];
  // A pack's paths become file names in working copies: one that is not a valid
  // notebook path (`../x`, `a//b`, a device name) makes the whole pack invalid.
  for (const path of raw.deletes)
    if (!isNotebookPath(path)) return Either.left("entry with an invalid path");
  for (const entry of raw.puts) {
    if (!isPutEntry(entry)) return Either.left("header: a put is not [path, id, offset, size]");
    const [path, id, offset, size] = entry;
    if (!isNotebookPath(path)) return Either.left("entry with an invalid path");
    if (!/^[0-9a-f]{64}$/.test(id)) return Either.left("entry with a malformed content id");
    if (
      !Number.isInteger(offset) ||
      !Number.isInteger(size) ||
      offset < 0 ||
      size < 0 ||
      offset + size > blobLength
    ) {
      return Either.left("entry addresses bytes outside the blob section");
    }
    puts.push({ path, id, offset, size });
  }
  if (raw.kind === "checkpoint" && raw.deletes.length > 0)
    return Either.left("a checkpoint cannot delete");
  const header: PackHeader = {
    kind: raw.kind,
    generation: raw.generation,
    publicationId: raw.publicationId,
    baseGeneration: raw.baseGeneration,
    ...(raw.publication === undefined ? {} : { publication: raw.publication }),
    puts,
    deletes: raw.deletes,
  };
  return Either.right({ header, blobStart });
};

/** The bytes of one put entry of a decoded pack (a view, not a copy). */
export const blobOf = (bytes: Uint8Array, pack: DecodedPack, put: PackPut): Uint8Array =>
  bytes.subarray(pack.blobStart + put.offset, pack.blobStart + put.offset + put.size);

/**
 * Whether every put of a decoded pack addresses bytes that hash to its content id (each
 * distinct blob hashed once). The pack's SHA-256 only proves the pack is the one its
 * descriptor names, not that its writer recorded the right ids: a pack built by a buggy
 * or hostile writer, with a matching descriptor, would otherwise put content under an id
 * it does not have — written into working copies as if it were that id, then shown as a
 * local change nobody made. Pure; never fails.
 */
export const blobsMatchIds = (bytes: Uint8Array, pack: DecodedPack): boolean => {
  const checked = new Map<string, string>();
  for (const put of pack.header.puts) {
    const where = `${put.offset}:${put.size}`;
    const known = checked.get(where);
    if (known !== undefined) {
      if (known !== put.id) return false;
      continue;
    }
    if (contentId(blobOf(bytes, pack, put)) !== put.id) return false;
    checked.set(where, put.id);
  }
  return true;
};
