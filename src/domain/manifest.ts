/**
 * The `current` manifest, version 1 (SPEC §7): the sole authority on the accepted
 * notebook. A strict codec: unknown fields, duplicate keys, missing fields, `null`,
 * inconsistent chains and unknown versions are refused before any pack is read.
 */
import { Either, ParseResult, Schema } from "effect";
import { describeIssue } from "./schemaProblem.js";
import { parseStrictJson } from "./strictJson.js";

const sha256Pattern = /^[0-9a-f]{64}$/;
const uuidv7Pattern = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const packKeyPattern =
  /^packs\/(checkpoints|increments)\/[1-9][0-9]*-[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.pack$/;

const Sha256Hex = Schema.String.pipe(Schema.pattern(sha256Pattern));
const Uuidv7 = Schema.String.pipe(Schema.pattern(uuidv7Pattern));
const PackKey = Schema.String.pipe(Schema.pattern(packKeyPattern));
const Generation = Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1));
const ByteSize = Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(0));

/** A pack descriptor: where a pack is, how to verify it, and which publication made it. */
export const PackDescriptor = Schema.Struct({
  key: PackKey,
  generation: Generation,
  size: ByteSize,
  sha256: Sha256Hex,
  publicationId: Uuidv7,
});
/** A pack descriptor. */
export type PackDescriptor = typeof PackDescriptor.Type;

/** A chain: one complete-state checkpoint and the ordered increments after it. */
export const PackChain = Schema.Struct({
  checkpoint: PackDescriptor,
  increments: Schema.Array(PackDescriptor),
});
/** A chain of packs. */
export type PackChain = typeof PackChain.Type;

/** The manifest, version 1. */
export const ManifestV1 = Schema.Struct({
  version: Schema.Literal(1),
  /** Monotonic: the first publication creates 1, every replacement adds exactly 1. */
  generation: Generation,
  /** The publication id of the latest accepted publication. */
  head: Uuidv7,
  checkpoint: PackDescriptor,
  increments: Schema.Array(PackDescriptor),
  /** Older chains kept so stale readers can finish (newest first). */
  retained: Schema.Array(PackChain),
});
/** A decoded manifest. */
export type Manifest = typeof ManifestV1.Type;

/** Why a manifest was refused. */
export interface ManifestProblem {
  readonly reason: "MANIFEST_INVALID" | "UNSUPPORTED_VERSION";
  readonly problem: string;
}

const decodeShape = ParseResult.decodeUnknownEither(ManifestV1, {
  onExcessProperty: "error",
  errors: "first",
});

/** A plain JSON object whose own keys are exactly `keys` (any order). */
const isRecordOf = (
  value: unknown,
  keys: ReadonlyArray<string>,
): value is Record<string, unknown> =>
  typeof value === "object" &&
  value !== null &&
  !Array.isArray(value) &&
  Object.keys(value).length === keys.length &&
  keys.every((key) => Object.hasOwn(value, key));

const isIntAtLeast = (value: unknown, min: number): value is number =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= min;

const isMatch = (value: unknown, pattern: RegExp): value is string =>
  typeof value === "string" && pattern.test(value);

const descriptorKeys = ["key", "generation", "size", "sha256", "publicationId"];
const isDescriptor = (value: unknown): value is PackDescriptor =>
  isRecordOf(value, descriptorKeys) &&
  isMatch(value.key, packKeyPattern) &&
  isIntAtLeast(value.generation, 1) &&
  isIntAtLeast(value.size, 0) &&
  isMatch(value.sha256, sha256Pattern) &&
  isMatch(value.publicationId, uuidv7Pattern);

const isDescriptors = (value: unknown): value is ReadonlyArray<PackDescriptor> =>
  Array.isArray(value) && value.every(isDescriptor);

const isChain = (value: unknown): value is PackChain =>
  isRecordOf(value, ["checkpoint", "increments"]) &&
  isDescriptor(value.checkpoint) &&
  isDescriptors(value.increments);

const manifestKeys = ["version", "generation", "head", "checkpoint", "increments", "retained"];

/**
 * Exactly the values {@link ManifestV1} decodes, with the same result (the value itself:
 * every field is a JSON primitive or array, so decoding copies nothing but the keys this
 * already requires to be exact). Why a second check of the same shape: `current` is read
 * before nearly every commit and by every copy catching up, and a manifest holds up to
 * `checkpointPacks × (retainedCheckpoints + 1)` descriptors; the Schema decode of 2,048 of
 * them costs ~15–20 ms of CPU, this well under 1 ms. The Schema stays the definition and
 * describes what is wrong when this refuses; a property test keeps the two identical.
 */
export const isManifestShape = (value: unknown): value is Manifest =>
  isRecordOf(value, manifestKeys) &&
  value.version === 1 &&
  isIntAtLeast(value.generation, 1) &&
  isMatch(value.head, uuidv7Pattern) &&
  isDescriptor(value.checkpoint) &&
  isDescriptors(value.increments) &&
  Array.isArray(value.retained) &&
  value.retained.every(isChain);

const decodeFast = (raw: unknown): Either.Either<Manifest, ParseResult.ParseIssue> =>
  isManifestShape(raw) ? Either.right(raw) : decodeShape(raw);

/**
 * Decodes and validates manifest text. Checks, beyond the shape: the checkpoint key
 * is a checkpoint and increment keys are increments; generations strictly increase
 * along each chain and never exceed the manifest's; `head` names a descriptor of the
 * active chain; no pack key or publication id appears twice.
 */
export const decodeManifest = (text: string): Either.Either<Manifest, ManifestProblem> => {
  const parsed = parseStrictJson(text);
  if (!parsed.ok) return Either.left({ reason: "MANIFEST_INVALID", problem: parsed.problem });
  const raw = parsed.value;
  if (typeof raw === "object" && raw !== null && !Array.isArray(raw) && "version" in raw) {
    if (raw.version !== 1) {
      return Either.left({
        reason: "UNSUPPORTED_VERSION",
        problem: `manifest version ${JSON.stringify(raw.version)} is not supported (this build reads version 1)`,
      });
    }
  }
  const shaped = decodeFast(raw);
  if (Either.isLeft(shaped)) {
    return Either.left({
      reason: "MANIFEST_INVALID",
      problem: describeIssue(shaped.left),
    });
  }
  const problem = consistencyProblem(shaped.right);
  return problem === undefined
    ? Either.right(shaped.right)
    : Either.left({ reason: "MANIFEST_INVALID", problem });
};

const chainProblem = (chain: PackChain, limit: number): string | undefined => {
  if (!chain.checkpoint.key.startsWith("packs/checkpoints/"))
    return "checkpoint descriptor names an increment pack";
  let previous = chain.checkpoint.generation;
  if (previous > limit) return "checkpoint generation exceeds the manifest generation";
  for (const increment of chain.increments) {
    if (!increment.key.startsWith("packs/increments/"))
      return "increment descriptor names a checkpoint pack";
    if (increment.generation <= previous) return "increment generations do not strictly increase";
    if (increment.generation > limit) return "increment generation exceeds the manifest generation";
    previous = increment.generation;
  }
  return undefined;
};

const consistencyProblem = (manifest: Manifest): string | undefined => {
  const active: PackChain = { checkpoint: manifest.checkpoint, increments: manifest.increments };
  const activeProblem = chainProblem(active, manifest.generation);
  if (activeProblem !== undefined) return activeProblem;
  for (const chain of manifest.retained) {
    const problem = chainProblem(chain, manifest.generation);
    if (problem !== undefined) return `retained chain: ${problem}`;
  }
  const keys = new Set<string>();
  const ids = new Set<string>();
  for (const descriptor of allDescriptors(manifest)) {
    if (keys.has(descriptor.key)) return "a pack key appears twice";
    if (ids.has(descriptor.publicationId)) return "a publication id appears twice";
    keys.add(descriptor.key);
    ids.add(descriptor.publicationId);
  }
  const activeIds = [manifest.checkpoint, ...manifest.increments].map((d) => d.publicationId);
  if (!activeIds.includes(manifest.head))
    return "head does not name a publication of the active chain";
  return undefined;
};

/** Every descriptor of the manifest: active chain first, then retained chains. */
export const allDescriptors = (manifest: Manifest): ReadonlyArray<PackDescriptor> => [
  manifest.checkpoint,
  ...manifest.increments,
  ...manifest.retained.flatMap((chain) => [chain.checkpoint, ...chain.increments]),
];

/** The packs that bring a tree at some generation up to a manifest's state. */
export interface CatchUpPlan {
  /** Whether they apply on top of that tree (`false`: from scratch, checkpoint first). */
  readonly incremental: boolean;
  /** In the order they apply. */
  readonly packs: ReadonlyArray<PackDescriptor>;
}

/**
 * How a tree at `generation` (0: none) reaches `manifest`'s state:
 * - at or past the active checkpoint: the active increments after it;
 * - older, but at or past the checkpoint of a retained chain: the increments after it
 *   from that chain and every newer one, then the active increments — each chain holds
 *   exactly the increments up to the next chain's checkpoint, so together they are every
 *   change since `generation` — provided the retained ones add up to no more bytes
 *   than the active checkpoint they stand in for;
 * - otherwise (a fresh tree, or one older than every retained chain): the active
 *   checkpoint and its increments.
 */
export const catchUpPlan = (manifest: Manifest, generation: number): CatchUpPlan => {
  const after = (ds: ReadonlyArray<PackDescriptor>) => ds.filter((d) => d.generation > generation);
  if (generation > 0 && manifest.checkpoint.generation <= generation)
    return { incremental: true, packs: after(manifest.increments) };
  const full = { incremental: false, packs: [manifest.checkpoint, ...manifest.increments] };
  if (generation === 0) return full;
  // Retained chains are newest first: the first one starting at or before `generation`.
  const from = manifest.retained.findIndex((chain) => chain.checkpoint.generation <= generation);
  if (from < 0) return full;
  const older = manifest.retained
    .slice(0, from + 1)
    .reverse()
    .flatMap((chain) => after(chain.increments));
  const bytes = older.reduce((sum, d) => sum + d.size, 0);
  return bytes <= manifest.checkpoint.size
    ? { incremental: true, packs: [...older, ...manifest.increments] }
    : full;
};

/** Encodes a manifest as canonical JSON (fixed key order). Never fails. */
export const encodeManifest = (manifest: Manifest): string => {
  const descriptor = (d: PackDescriptor) => ({
    key: d.key,
    generation: d.generation,
    size: d.size,
    sha256: d.sha256,
    publicationId: d.publicationId,
  });
  return JSON.stringify({
    version: 1,
    generation: manifest.generation,
    head: manifest.head,
    checkpoint: descriptor(manifest.checkpoint),
    increments: manifest.increments.map(descriptor),
    retained: manifest.retained.map((chain) => ({
      checkpoint: descriptor(chain.checkpoint),
      increments: chain.increments.map(descriptor),
    })),
  });
};

/** The key of the manifest object below the store prefix. */
export const manifestKey = "current";

/** The store key of a new pack. */
export const packKey = (
  kind: "checkpoint" | "increment",
  generation: number,
  publicationId: string,
): string =>
  `packs/${kind === "checkpoint" ? "checkpoints" : "increments"}/${generation}-${publicationId}.pack`;
