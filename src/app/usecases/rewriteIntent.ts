/**
 * The rewrite intent: what an interrupted rewrite of a working copy was doing, so that
 * recovery merges each file against the right base (SPEC §8).
 *
 * Why: a rewrite replaces files one by one; a crash leaves some files at their new
 * content (derived from the accepted state A being settled on) and the rest at their
 * old content (derived from the recorded baseline B). Recovery merges the copy onto
 * `current`, which may have moved past A meanwhile. Merging a rewritten file against B
 * would present A's changes as the copy's own edits and conflict with `current`'s
 * later changes to the same lines. So, per path: a file already at its target content
 * is merged against A; a file not yet rewritten against the base the interrupted merge
 * used (B, or — after a crash during a recovery — that recovery's own base).
 *
 * `intent.json` in the copy's private directory, written durably before
 * `recoveryRequired` is set; only read while it is set. Trees are stored as deltas from
 * the recorded baseline, so the cost follows the size of the change.
 */
import { join } from "node:path";
import { Effect, Option } from "effect";
import type { DomainError } from "../../domain/errors.js";
import { encodeText } from "../../domain/content.js";
import { parseStrictJson } from "../../domain/strictJson.js";
import type { Tree } from "../../domain/tree.js";
import type { CopyCall } from "./context.js";
import { localFailure } from "./failures.js";
import type { BlobRef, CopyState } from "./privateState.js";
import type { RemoteView } from "./remote.js";
import type { Scan } from "./workingCopy.js";

const intentVersion = 1;

const intentFile = (copyDir: string): string => join(copyDir, "intent.json");

type Delta = ReadonlyArray<readonly [string, BlobRef | null]>;

/** The decoded intent. */
interface Intent {
  /** The baseline (generation, head) it was written against. */
  readonly generation: number;
  readonly head: string;
  /** The accepted state being settled on, as a delta from the baseline. */
  readonly accepted: Delta;
  /** The base the interrupted merge used, as a delta from the baseline. */
  readonly base: Delta;
  /** Every path the rewrite changes, with its target content id (`null`: removed). */
  readonly target: ReadonlyArray<readonly [string, string | null]>;
}

const delta = (from: ReadonlyMap<string, BlobRef>, to: ReadonlyMap<string, BlobRef>): Delta => {
  const out: Array<readonly [string, BlobRef | null]> = [];
  for (const [path, ref] of to) if (from.get(path)?.id !== ref.id) out.push([path, ref]);
  for (const path of from.keys()) if (!to.has(path)) out.push([path, null]);
  return out;
};

const apply = (tree: ReadonlyMap<string, BlobRef>, changes: Delta): Map<string, BlobRef> => {
  const out = new Map(tree);
  for (const [path, ref] of changes) {
    if (ref === null) out.delete(path);
    else out.set(path, ref);
  }
  return out;
};

const isRef = (value: unknown): value is BlobRef =>
  typeof value === "object" &&
  value !== null &&
  "id" in value &&
  typeof value.id === "string" &&
  /^[0-9a-f]{64}$/.test(value.id) &&
  "pack" in value &&
  typeof value.pack === "string" &&
  /^[0-9a-f]{64}$/.test(value.pack) &&
  "offset" in value &&
  Number.isSafeInteger(value.offset) &&
  "size" in value &&
  Number.isSafeInteger(value.size);

const decodeDelta = (raw: unknown): Delta | undefined => {
  if (!Array.isArray(raw)) return undefined;
  const out: Array<readonly [string, BlobRef | null]> = [];
  for (const entry of raw) {
    if (!Array.isArray(entry) || entry.length !== 2) return undefined;
    const [path, ref] = entry;
    if (typeof path !== "string" || !(ref === null || isRef(ref))) return undefined;
    out.push([
      path,
      ref === null ? null : { id: ref.id, pack: ref.pack, offset: ref.offset, size: ref.size },
    ]);
  }
  return out;
};

const decodeIntent = (raw: unknown): Intent | undefined => {
  if (typeof raw !== "object" || raw === null) return undefined;
  if (!("version" in raw) || raw.version !== intentVersion) return undefined;
  if (!("generation" in raw) || !Number.isSafeInteger(raw.generation)) return undefined;
  if (!("head" in raw) || typeof raw.head !== "string") return undefined;
  const generation = Number(raw.generation);
  const accepted = "accepted" in raw ? decodeDelta(raw.accepted) : undefined;
  const base = "base" in raw ? decodeDelta(raw.base) : undefined;
  if (accepted === undefined || base === undefined) return undefined;
  if (!("target" in raw) || !Array.isArray(raw.target)) return undefined;
  const target: Array<readonly [string, string | null]> = [];
  for (const entry of raw.target) {
    if (!Array.isArray(entry) || entry.length !== 2) return undefined;
    const [path, id] = entry;
    if (typeof path !== "string" || !(id === null || typeof id === "string")) return undefined;
    target.push([path, id]);
  }
  return { generation, head: raw.head, accepted, base, target };
};

/** The intent on disk if it belongs to `state`'s baseline; `None` otherwise (never fails). */
const loadIntent = (call: CopyCall, state: CopyState): Effect.Effect<Option.Option<Intent>> =>
  call.fs.readFile(intentFile(call.copyDir)).pipe(
    Effect.map((bytes) => {
      const parsed = parseStrictJson(new TextDecoder().decode(bytes));
      const intent = parsed.ok ? decodeIntent(parsed.value) : undefined;
      return intent !== undefined &&
        intent.generation === state.generation &&
        intent.head === state.head
        ? Option.some(intent)
        : Option.none();
    }),
    Effect.orElseSucceed(() => Option.none<Intent>()),
  );

/**
 * The tree a recovering copy must be merged against: per path, the accepted state of the
 * interrupted rewrite where the working copy (`scan`) already holds the target content
 * (or the path was not part of the rewrite), else the base that rewrite's merge used.
 * Without a usable intent it is the recorded baseline (the pre-intent behaviour).
 * Registers every blob of the result with the call's content source.
 */
export const recoveryBase = (
  call: CopyCall,
  state: CopyState,
  scan: Scan,
): Effect.Effect<ReadonlyMap<string, BlobRef>> =>
  Effect.gen(function* () {
    const intent = yield* loadIntent(call, state);
    if (Option.isNone(intent)) return state.baseline;
    const accepted = apply(state.baseline, intent.value.accepted);
    const base = apply(state.baseline, intent.value.base);
    const result = new Map(accepted);
    for (const [path, id] of intent.value.target) {
      if ((scan.get(path)?.id ?? null) === id) continue;
      const previous = base.get(path);
      if (previous === undefined) result.delete(path);
      else result.set(path, previous);
    }
    for (const ref of result.values()) call.blobs.addRef(ref);
    return result;
  });

/**
 * Durably records the intent of rewriting the working copy from `scan` to `merged` to
 * settle on `accepted`, before `recoveryRequired` is set. When the copy is itself
 * recovering, the merge base recorded is the one {@link recoveryBase} gives.
 */
export const saveIntent = (
  call: CopyCall,
  state: CopyState,
  scan: Scan,
  merged: Tree,
  accepted: RemoteView,
): Effect.Effect<void, DomainError> =>
  Effect.gen(function* () {
    const base = state.recoveryRequired ? yield* recoveryBase(call, state, scan) : state.baseline;
    const target: Array<readonly [string, string | null]> = [];
    for (const [path, file] of scan) {
      const id = merged.get(path);
      if (id !== file.id) target.push([path, id ?? null]);
    }
    for (const [path, id] of merged) if (!scan.has(path)) target.push([path, id]);
    const intent = {
      version: intentVersion,
      generation: state.generation,
      head: state.head,
      accepted: delta(state.baseline, accepted.tree),
      base: delta(state.baseline, base),
      target,
    };
    yield* call.fs
      .writeFileAtomic(intentFile(call.copyDir), encodeText(JSON.stringify(intent)), {
        mode: 0o600,
        durable: true,
      })
      .pipe(Effect.mapError((error) => localFailure(error, "writing private state")));
  });
