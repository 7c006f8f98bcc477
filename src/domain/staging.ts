/**
 * Staged publications (SPEC §7, docs/storage.md "Staged publications"): a writer that
 * contends for `current` also stores what it wants to publish under a key of its own,
 * so that whichever writer wins the next swap can accept it along with its own.
 *
 * A staged record holds the increments of one writer's batch, merged onto one accepted
 * state (`baseGeneration`/`baseHead`), in order. It is valid only for a swap of that
 * very state: its key starts with the base generation, and a writer includes only the
 * records staged on the manifest it swaps from. Once `current` has moved past the base,
 * the record can never be accepted, which lets its writer decide its fate from `current`
 * alone (docs/storage.md says why that matters).
 *
 * Layout: the ASCII line `QUIRE-STAGE 1\n`, the header's byte length in decimal and
 * `\n`, the header as JSON (`baseGeneration`, `baseHead`, and per pack its `size` and
 * `sha256`), then the packs concatenated. Every pack is an ordinary increment pack.
 */
import { createHash } from "node:crypto";
import { Either, ParseResult, Schema } from "effect";
import { encodeText } from "./content.js";
import {
  blobOf,
  blobsMatchIds,
  decodePack,
  encodePack,
  type DecodedPack,
  type PackHeader,
} from "./pack.js";
import { caseFoldKey, forEachDirectory } from "./paths.js";
import { describeIssue } from "./schemaProblem.js";
import { parseStrictJson } from "./strictJson.js";

const magic = "QUIRE-STAGE 1\n";

/** The most packs one staged record may hold (a process's batch holds at most 32). */
export const maxStagedPacks = 64;

/** The prefix of every staged record's key. */
export const stagingPrefix = "staging/";

/** Fixed-width decimal, so that the keys of one base sort together and by base. */
const generationField = (generation: number): string => String(generation).padStart(16, "0");

/** The key prefix of the records staged on the state at `baseGeneration`. */
export const stagingPrefixFor = (baseGeneration: number): string =>
  `${stagingPrefix}${generationField(baseGeneration)}-`;

/**
 * The key of a record staged on `baseGeneration` for commits whose oldest ticket (a
 * UUIDv7 taken when the commit started) is `ticket`, the first publication being
 * `publicationId`: records on one base sort by how long their commits have waited.
 */
export const stagingKey = (baseGeneration: number, ticket: string, publicationId: string): string =>
  `${stagingPrefixFor(baseGeneration)}${ticket}-${publicationId}`;

const uuidv7 = "[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}";
const stagingKeyPattern = new RegExp(`^staging/([0-9]{16})-${uuidv7}-${uuidv7}$`);

/** The base generation a staged record's key names, or `undefined` for any other key. */
export const stagedBaseOf = (key: string): number | undefined => {
  const match = stagingKeyPattern.exec(key);
  return match === null || match[1] === undefined ? undefined : Number(match[1]);
};

/** One pack of a staged record: its bytes and decoded header. */
export interface StagedPack {
  readonly bytes: Uint8Array;
  readonly pack: DecodedPack;
}

/** A decoded staged record. */
export interface Staged {
  readonly baseGeneration: number;
  readonly baseHead: string;
  readonly packs: ReadonlyArray<StagedPack>;
}

const HeaderShape = Schema.Struct({
  baseGeneration: Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1)),
  baseHead: Schema.String,
  packs: Schema.Array(
    Schema.Struct({
      size: Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(0)),
      sha256: Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/)),
    }),
  ).pipe(Schema.minItems(1), Schema.maxItems(maxStagedPacks)),
});
const decodeHeader = ParseResult.decodeUnknownEither(HeaderShape, {
  onExcessProperty: "error",
  errors: "first",
});

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

/** Encodes a staged record of `packs` (increment packs, in order) merged onto the given base. */
export const encodeStaged = (
  baseGeneration: number,
  baseHead: string,
  packs: ReadonlyArray<Uint8Array>,
): Uint8Array => {
  const header = encodeText(
    JSON.stringify({
      baseGeneration,
      baseHead,
      packs: packs.map((bytes) => ({ size: bytes.length, sha256: sha256(bytes) })),
    }),
  );
  const prefix = encodeText(`${magic}${header.length}\n`);
  const total = prefix.length + header.length + packs.reduce((sum, p) => sum + p.length, 0);
  const out = new Uint8Array(total);
  out.set(prefix, 0);
  out.set(header, prefix.length);
  let at = prefix.length + header.length;
  for (const bytes of packs) {
    out.set(bytes, at);
    at += bytes.length;
  }
  return out;
};

/**
 * Decodes and checks a staged record: the header's shape, every pack's size and
 * SHA-256, every pack a valid increment pack with a publication whose blobs hash to
 * their content ids, distinct publication ids, and generations that follow the base one
 * by one. Returns a problem description on any violation: such a record is never
 * included, whoever wrote it.
 */
export const decodeStaged = (bytes: Uint8Array): Either.Either<Staged, string> => {
  const magicBytes = encodeText(magic);
  for (let i = 0; i < magicBytes.length; i++)
    if (bytes[i] !== magicBytes[i]) return Either.left("not a staged record (bad magic)");
  const lengthEnd = bytes.indexOf(0x0a, magicBytes.length);
  if (lengthEnd < 0 || lengthEnd - magicBytes.length > 12)
    return Either.left("bad header length line");
  const lengthText = new TextDecoder().decode(bytes.subarray(magicBytes.length, lengthEnd));
  if (!/^[0-9]+$/.test(lengthText)) return Either.left("bad header length");
  const headerStart = lengthEnd + 1;
  const packsStart = headerStart + Number(lengthText);
  if (packsStart > bytes.length) return Either.left("header runs past the end");
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(
      bytes.subarray(headerStart, packsStart),
    );
  } catch {
    return Either.left("header is not UTF-8");
  }
  const parsed = parseStrictJson(text);
  if (!parsed.ok) return Either.left(`header: ${parsed.problem}`);
  const shaped = decodeHeader(parsed.value);
  if (Either.isLeft(shaped)) return Either.left(`header: ${describeIssue(shaped.left)}`);
  const header = shaped.right;
  const total = header.packs.reduce((sum, p) => sum + p.size, 0);
  if (packsStart + total !== bytes.length) return Either.left("pack sizes do not add up");
  const packs: StagedPack[] = [];
  const ids = new Set<string>();
  let at = packsStart;
  for (const [index, described] of header.packs.entries()) {
    const packBytes = bytes.subarray(at, at + described.size);
    at += described.size;
    if (sha256(packBytes) !== described.sha256) return Either.left("a pack's SHA-256 differs");
    const decoded = decodePack(packBytes);
    if (Either.isLeft(decoded)) return Either.left(`a pack is malformed: ${decoded.left}`);
    const pack = decoded.right;
    // Another writer's content is republished by whoever includes it: ids must be right.
    if (!blobsMatchIds(packBytes, pack)) return Either.left("a pack's content is not its id");
    const expected = header.baseGeneration + index + 1;
    if (pack.header.kind !== "increment" || pack.header.publication === undefined)
      return Either.left("a pack is not a publication's increment");
    if (pack.header.generation !== expected || pack.header.baseGeneration !== expected - 1)
      return Either.left("the packs do not follow the base generation one by one");
    if (ids.has(pack.header.publicationId)) return Either.left("a publication id appears twice");
    ids.add(pack.header.publicationId);
    packs.push({ bytes: packBytes, pack });
  }
  return Either.right({
    baseGeneration: header.baseGeneration,
    baseHead: header.baseHead,
    packs,
  });
};

/** The paths a pack writes or deletes. */
export const touchedPaths = (header: PackHeader): ReadonlyArray<string> => [
  ...header.puts.map((put) => put.path),
  ...header.deletes,
];

/**
 * The paths publications on one base have claimed, to tell whether another set of
 * changes on that base applies to their result exactly as it applies to the base:
 * when no path it touches is claimed, is a directory of a claimed path, or has a
 * claimed path among its directories (file against directory), compared case-folded
 * (a notebook never holds two paths that differ only in case).
 */
export interface Claims {
  /** Whether `paths` are clear of every claim. */
  readonly clear: (paths: ReadonlyArray<string>) => boolean;
  /** Claims `paths`. */
  readonly claim: (paths: ReadonlyArray<string>) => void;
}

/** An empty set of {@link Claims}. */
export const makeClaims = (): Claims => {
  const files = new Set<string>();
  // Each claimed directory, folded, with the spellings it was claimed with: a path under
  // the same directory spelled otherwise (`Notes/a.md` against `notes/b.md`) lands in
  // one directory on a case-insensitive file system — a case collision that a merge
  // would have split (treeMerge.ts), and that every later scan would refuse.
  const directories = new Map<string, Set<string>>();
  return {
    clear: (paths) =>
      paths.every((path) => {
        const folded = caseFoldKey(path);
        if (files.has(folded) || directories.has(folded)) return false;
        let clear = true;
        forEachDirectory(path, folded, (spelling, foldedDirectory) => {
          if (files.has(foldedDirectory)) clear = false;
          const claimed = directories.get(foldedDirectory);
          if (claimed !== undefined && (claimed.size > 1 || !claimed.has(spelling))) clear = false;
        });
        return clear;
      }),
    claim: (paths) => {
      for (const path of paths) {
        const folded = caseFoldKey(path);
        files.add(folded);
        forEachDirectory(path, folded, (spelling, foldedDirectory) => {
          const claimed = directories.get(foldedDirectory);
          if (claimed === undefined) directories.set(foldedDirectory, new Set([spelling]));
          else claimed.add(spelling);
        });
      }
    },
  };
};

/**
 * The same publication as `staged` (its id, message, time, author, puts and deletes)
 * encoded as the increment at `generation`: a staged pack is merged onto its base, and
 * the swap that accepts it may place it later in the sequence.
 */
export const repack = (
  staged: StagedPack,
  generation: number,
): { readonly bytes: Uint8Array; readonly header: PackHeader } => {
  const header = staged.pack.header;
  const files = new Map<string, Uint8Array | undefined>();
  for (const put of header.puts) files.set(put.path, blobOf(staged.bytes, staged.pack, put));
  for (const path of header.deletes) files.set(path, undefined);
  const encoded = encodePack({
    kind: "increment",
    generation,
    publicationId: header.publicationId,
    baseGeneration: generation - 1,
    ...(header.publication === undefined ? {} : { publication: header.publication }),
    files,
  });
  return { bytes: encoded.bytes, header: encoded.header };
};
