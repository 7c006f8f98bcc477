/**
 * The rewrite intent: what an interrupted rewrite of a working copy was doing, so that
 * recovery neither invents conflicts nor reverts anything (SPEC §8).
 *
 * Why: a rewrite replaces files one by one (each atomically), moving the copy from its
 * scanned content O to the target content T while the baseline moves from B to the
 * accepted state A. A crash leaves each file at O or T — and the caller may edit files
 * before the next call. Recovery merges the copy onto `current`, which may have moved
 * past A. Merging a file derived from T against B would present A's changes as the
 * copy's own edits (spurious conflicts with `current`'s later changes); merging a file
 * derived from O against A would silently revert A's changes. So recovery first rolls
 * every such file forward — `merge(O, now, T)`, which is T for an untouched file, the
 * file itself for a rewritten one, and the caller's later edits on top of T otherwise —
 * and then merges against A. Only when rolling forward conflicts is the file left as it
 * is and merged against the base the interrupted merge used (B), as before.
 *
 * A commit writes the same record before its compare-and-swap of `current`, naming its
 * publication id: a process killed after the swap but before touching the copy leaves
 * the baseline behind the accepted state, and the copy's next edit would otherwise be
 * merged against the old baseline and conflict with its own publication. The next call
 * uses such a record only if `current` shows the publication landed.
 *
 * Stored as `intent.json` in the copy's private directory, written durably before
 * `recoveryRequired` is set (or before the swap), and used only when it belongs to the
 * recorded baseline. Trees are deltas from the
 * recorded baseline; contents of O and T not already in a cached pack (the copy's own
 * edits, merge results) go into one small pack of the object cache. Everything is
 * proportional to the change being written, not to the notebook.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { Effect, Option } from "effect";
import { alongside } from "../shared/pooled.js";
import { contentId, decodeText, encodeText } from "../../../domain/content.js";
import type { DomainError, FileIssue } from "../../../domain/errors.js";
import { allDescriptors, type Manifest } from "../../../domain/manifest.js";
import { findMarkerBlocks } from "../../../domain/markers.js";
import { encodePack } from "../../../domain/pack.js";
import { parseStrictJson } from "../../../domain/strictJson.js";
import { mergeText } from "../../../domain/textMerge.js";
import { idsOf, type Tree } from "../../../domain/tree.js";
import type { CopyCall } from "../shared/context.js";
import { localFailure, privateRootNamed } from "../shared/failures.js";
import { mergeBaseOf, packFile, type BlobRef, type CopyState } from "./privateState.js";
import { samePublication, type RemoteView } from "../commit/remote.js";
import type { Scan } from "./workingCopy.js";
import { makeBlobSource } from "./blobs.js";
import { noOwnVersions, type KeptVersions, type OwnVersions } from "./leftovers.js";

const intentVersion = 1;

const intentFile = (copyDir: string): string => join(copyDir, "intent.json");

type Delta = ReadonlyArray<readonly [string, BlobRef | null]>;

/** One path the rewrite changes: its content before (O) and after (T); `null` = absent. */
type Target = readonly [string, BlobRef | null, BlobRef | null];

/** A decoded intent (opaque outside this module). */
export interface Intent {
  /** The baseline (generation, head) it was written against. */
  readonly generation: number;
  readonly head: string;
  /** The accepted state being settled on (A), as a delta from the baseline. */
  readonly accepted: Delta;
  /** The base the interrupted merge used, as a delta from the baseline. */
  readonly base: Delta;
  readonly targets: ReadonlyArray<Target>;
  /** The publication id of a commit written before its swap; `null` for a rewrite. */
  readonly publication: string | null;
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

const hex64 = /^[0-9a-f]{64}$/;

const decodeRef = (value: unknown): BlobRef | null | undefined => {
  if (value === null) return null;
  if (!Array.isArray(value) || value.length !== 4) return undefined;
  const [id, pack, offset, size] = value;
  if (typeof id !== "string" || !hex64.test(id)) return undefined;
  if (typeof pack !== "string" || !hex64.test(pack)) return undefined;
  if (typeof offset !== "number" || !Number.isSafeInteger(offset) || offset < 0) return undefined;
  if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0) return undefined;
  return { id, pack, offset, size };
};

const encodeRef = (ref: BlobRef | null) =>
  ref === null ? null : [ref.id, ref.pack, ref.offset, ref.size];

const decodeRows = <R>(raw: unknown, width: number, row: (cells: unknown[]) => R | undefined) => {
  if (!Array.isArray(raw)) return undefined;
  const out: R[] = [];
  for (const entry of raw) {
    if (!Array.isArray(entry) || entry.length !== width || typeof entry[0] !== "string")
      return undefined;
    const decoded = row(entry);
    if (decoded === undefined) return undefined;
    out.push(decoded);
  }
  return out;
};

const decodeDelta = (raw: unknown): Delta | undefined =>
  decodeRows(raw, 2, ([path, ref]) => {
    const decoded = decodeRef(ref);
    return decoded === undefined ? undefined : ([String(path), decoded] as const);
  });

const decodeIntent = (raw: unknown): Intent | undefined => {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return undefined;
  if (!("version" in raw) || raw.version !== intentVersion) return undefined;
  if (!("generation" in raw) || typeof raw.generation !== "number") return undefined;
  if (!("head" in raw) || typeof raw.head !== "string") return undefined;
  const accepted = "accepted" in raw ? decodeDelta(raw.accepted) : undefined;
  const base = "base" in raw ? decodeDelta(raw.base) : undefined;
  const targets =
    "targets" in raw
      ? decodeRows(raw.targets, 3, ([path, before, after]): Target | undefined => {
          const o = decodeRef(before);
          const t = decodeRef(after);
          return o === undefined || t === undefined ? undefined : [String(path), o, t];
        })
      : undefined;
  if (accepted === undefined || base === undefined || targets === undefined) return undefined;
  if (!("publication" in raw) || !(raw.publication === null || typeof raw.publication === "string"))
    return undefined;
  return {
    generation: raw.generation,
    head: raw.head,
    accepted,
    base,
    targets,
    publication: raw.publication,
  };
};

/**
 * The accepted state a rewrite intent was settling on (A), from the baseline it belongs
 * to (`state.baseline`, see {@link loadIntent}).
 */
export const acceptedTreeOf = (
  intent: Intent,
  baseline: ReadonlyMap<string, BlobRef>,
): ReadonlyMap<string, BlobRef> => apply(baseline, intent.accepted);

/**
 * The intent on disk if it belongs to `state`'s baseline; `None` when there is none, or
 * what is there is no intent of this baseline (malformed, another baseline's). Fails
 * (LOCAL_IO or LOCAL_ACCESS) when it cannot be read: a transient failure taken as "no
 * intent" would recover an interrupted rewrite or commit without it, raising conflicts
 * with the copy's own published text, or leave a staged record of it alive.
 */
export const loadIntent = (
  call: CopyCall,
  state: CopyState,
): Effect.Effect<Option.Option<Intent>, DomainError> =>
  call.fs.readFile(intentFile(call.copyDir)).pipe(
    Effect.map((bytes) => {
      const parsed = parseStrictJson(new TextDecoder().decode(bytes));
      const intent = parsed.ok ? decodeIntent(parsed.value) : undefined;
      return intent !== undefined && samePublication(intent, state)
        ? Option.some(intent)
        : Option.none();
    }),
    Effect.catchIf(
      (error) =>
        error.reason === "NotFound" ||
        error.reason === "NotRegularFile" ||
        error.reason === "IsADirectory",
      () => Effect.succeed(Option.none<Intent>()),
    ),
    Effect.mapError((error) =>
      localFailure(error, `reading private state in the ${privateRootNamed}`),
    ),
  );

/**
 * {@link loadIntent} for the readers whose "no intent" is the safe side (what is kept of
 * the copy's versions: fewer, so nothing more is removed; the bases a settling keeps
 * for held files, read just after this call wrote the intent): unreadable is none.
 */
const intentOrNone = (call: CopyCall, state: CopyState): Effect.Effect<Option.Option<Intent>> =>
  loadIntent(call, state).pipe(Effect.orElseSucceed(() => Option.none<Intent>()));

/**
 * Where the content each of `paths` had when the rewrite of the intent on disk began (O,
 * what the scan read) is cached, for the intent that belongs to `state`: `null` for a
 * path the copy did not hold; a path the intent does not name is left out (as is every
 * path when there is no such intent). Every O the intent names is in a durable cached
 * pack (buildIntent). Never fails.
 */
export const scannedContents = (
  call: CopyCall,
  state: CopyState,
  paths: ReadonlyArray<string>,
): Effect.Effect<ReadonlyMap<string, BlobRef | null>> =>
  intentOrNone(call, state).pipe(
    Effect.map((intent) => {
      const wanted = new Set(paths);
      const found = new Map<string, BlobRef | null>();
      if (Option.isSome(intent))
        for (const [path, before] of intent.value.targets)
          if (wanted.has(path)) found.set(path, before);
      return found;
    }),
  );

/**
 * What quire keeps of the versions of `call`'s notes, for the scan (leftovers.ts
 * `KeptVersions`): its baseline's and merge base's contents and, while a rewrite or
 * commit is in flight (the copy flagged for recovery, or a commit's intent not settled),
 * what its scan read (the intent's O) and what it was writing (T), each in a durable
 * cached pack. A copy never pulled keeps none. The intent is read only when the scan asks.
 */
export const ownVersionsOf = (call: CopyCall): OwnVersions =>
  Option.match(call.state, {
    onNone: () => noOwnVersions,
    onSome: (state) =>
      intentOrNone(call, state).pipe(
        Effect.map((loaded): KeptVersions => {
          const inFlight = Option.filter(
            loaded,
            (intent) => state.recoveryRequired || intent.publication !== null,
          );
          const targets = new Map<string, Target>();
          if (Option.isSome(inFlight))
            for (const target of inFlight.value.targets) targets.set(target[0], target);
          const base = mergeBaseOf(state);
          return {
            keeps: (path, id) =>
              state.baseline.get(path)?.id === id ||
              base.get(path)?.id === id ||
              targets.get(path)?.[1]?.id === id,
            writing: (path) => {
              const after = targets.get(path)?.[2];
              if (after === undefined || after === null) return Effect.succeed(Option.none());
              // A source of its own: a ref that fails to load must not stand in the call's
              // way to the same content elsewhere.
              const source = makeBlobSource(call.fs, call.copyDir);
              source.addRef(after);
              return Effect.option(source.load(after.id));
            },
          };
        }),
      ),
  });

/**
 * Whether `intent` must be used by a call whose state does not require recovery: it is a
 * commit's, and `manifest` (the `current` just read) names that commit's publication
 * id, active or retained — the process stopped after the swap, before settling.
 */
export const publicationLanded = (
  intent: Option.Option<Intent>,
  manifest: Option.Option<Manifest>,
): boolean => Option.isSome(landedGeneration(intent, manifest));

/**
 * The generation of the commit publication `intent` names when `manifest` names it
 * ({@link publicationLanded}); `None` otherwise (a rewrite's intent, no intent, or a
 * commit whose swap did not land).
 */
export const landedGeneration = (
  intent: Option.Option<Intent>,
  manifest: Option.Option<Manifest>,
): Option.Option<number> => {
  if (Option.isNone(intent) || Option.isNone(manifest)) return Option.none();
  const id = intent.value.publication;
  if (id === null) return Option.none();
  return Option.fromNullable(
    allDescriptors(manifest.value).find((d) => d.publicationId === id)?.generation,
  );
};

/** What a recovering copy is merged with: the base tree and its (rolled-forward) local tree. */
export interface RecoveryInputs {
  readonly base: ReadonlyMap<string, BlobRef>;
  readonly local: Tree;
  /**
   * The base the copy as scanned descends from: `base`, but for a file rolled forward
   * (its content on disk never was the target it is merged as), the base the
   * interrupted merge used. What a rewrite intent records, since its O is the scan.
   */
  readonly scannedBase: ReadonlyMap<string, BlobRef>;
}

const textOf = (call: CopyCall, id: string): Effect.Effect<Option.Option<string>> =>
  call.blobs.load(id).pipe(
    Effect.map((bytes) => {
      const decoded = decodeText(bytes);
      return "text" in decoded ? Option.some(decoded.text) : Option.none<string>();
    }),
    Effect.orElseSucceed(() => Option.none<string>()),
  );

/**
 * The merge inputs of a copy whose rewrite was interrupted (see the module comment):
 * every file the rewrite touched is rolled forward where that merges cleanly, and the
 * base is the accepted state of the interrupted rewrite, except for files that could
 * not be rolled forward, whose base stays the one that rewrite's merge used. Without a
 * usable intent: the recorded baseline and the copy as scanned (the plain resync).
 * Registers every blob it refers to with the call's content source. Never fails.
 */
export const recoveryInputs = (
  call: CopyCall,
  state: CopyState,
  intent: Option.Option<Intent>,
  local: Tree,
): Effect.Effect<RecoveryInputs> =>
  Effect.gen(function* () {
    if (Option.isNone(intent)) {
      const base = mergeBaseOf(state);
      return { base, local, scannedBase: base };
    }
    const accepted = apply(state.baseline, intent.value.accepted);
    const previous = apply(state.baseline, intent.value.base);
    call.blobs.addTree(accepted);
    call.blobs.addTree(previous);
    for (const [, before, after] of intent.value.targets) {
      if (before !== null) call.blobs.addRef(before);
      if (after !== null) call.blobs.addRef(after);
    }
    const base = new Map(accepted);
    const rolled = new Map(local);
    const setFrom = (tree: Map<string, BlobRef>, path: string) => {
      const ref = previous.get(path);
      if (ref === undefined) tree.delete(path);
      else tree.set(path, ref);
    };
    const keepPrevious = (path: string) => setFrom(base, path);
    // The rolled-forward files' contents on disk still descend from the previous base:
    // a later recovery that finds one of them deleted or edited past merging must merge
    // against that base, or the accepted changes the disk never held would read as the
    // person's undoing them (a deletion taken silently over a change of the notebook's).
    const rolledForward: string[] = [];
    for (const [path, before, after] of intent.value.targets) {
      const now = local.get(path) ?? null;
      const o = before?.id ?? null;
      const t = after?.id ?? null;
      if (now === t) continue;
      if (now === o) {
        if (t === null) rolled.delete(path);
        else rolled.set(path, t);
        rolledForward.push(path);
        continue;
      }
      // Edited since the crash: roll the edit forward onto T if that merges cleanly.
      if (now === null || o === null || t === null) {
        keepPrevious(path);
        continue;
      }
      const texts = yield* Effect.all([textOf(call, o), textOf(call, now), textOf(call, t)]);
      const [oText, nowText, tText] = texts;
      if (Option.isNone(oText) || Option.isNone(nowText) || Option.isNone(tText)) {
        keepPrevious(path);
        continue;
      }
      const result = mergeText(oText.value, nowText.value, tText.value);
      if (result.conflicts.length > 0) {
        keepPrevious(path);
        continue;
      }
      const bytes = encodeText(result.text);
      const id = contentId(bytes);
      call.blobs.addBytes(id, bytes);
      rolled.set(path, id);
      rolledForward.push(path);
    }
    const scannedBase = new Map(base);
    for (const path of rolledForward) setFrom(scannedBase, path);
    return { base, local: rolled, scannedBase };
  });

/**
 * The conflict blocks of an interrupted rewrite that the copy holds once recovered:
 * among the files it was writing, those whose target held marker blocks and whose
 * content after this call (`merged`: written before the failure, or by the roll-forward
 * now) still holds some, with those blocks' lines. Why: a pull that
 * failed after writing a conflict answered with its failure, not the conflict; the call
 * that settles the copy must not answer OK over blocks still to resolve (the commit
 * would refuse them as UNRESOLVED_MARKERS, too late for the caller to know why). Only
 * the intent's own targets are read, so the cost follows the interrupted change. Never
 * fails: a content that cannot be read is left out.
 */
export const interruptedConflicts = (
  call: CopyCall,
  intent: Option.Option<Intent>,
  merged: Tree,
): Effect.Effect<ReadonlyArray<FileIssue>> =>
  Effect.gen(function* () {
    if (Option.isNone(intent)) return [];
    const found: FileIssue[] = [];
    for (const [path, , target] of intent.value.targets) {
      const now = merged.get(path);
      if (target === null || now === undefined) continue;
      const targetText = yield* textOf(call, target.id);
      if (Option.isNone(targetText) || findMarkerBlocks(targetText.value).length === 0) continue;
      const nowText = now === target.id ? targetText : yield* textOf(call, now);
      if (Option.isNone(nowText)) continue;
      const blocks = findMarkerBlocks(nowText.value);
      if (blocks.length > 0) found.push({ path, reason: "TEXT_CONFLICT", ranges: blocks });
    }
    return found;
  });

/**
 * Durably records the intent of rewriting the working copy from `scan` to `merged` to
 * settle on `accepted`, before `recoveryRequired` is set — or, with `publication`, before
 * a commit's compare-and-swap (see the module comment). The merge base recorded is
 * the one the scanned contents descend from: the baseline, or for a copy that is itself
 * recovering the `scannedBase` of {@link recoveryInputs} (recomputed: it is
 * deterministic) — not the base its merge used for a file it rolled forward, whose
 * content on disk never held the accepted change that base has. Contents the intent needs that no
 * cached pack holds go into a small pack of the object cache first. Returns once the
 * intent and every pack the call is still caching are durable.
 */
export const saveIntent = (
  call: CopyCall,
  state: CopyState,
  scan: Scan,
  merged: Tree,
  accepted: RemoteView,
  publication: string | null = null,
): Effect.Effect<void, DomainError> => {
  const write = (text: string) =>
    call.fs
      .writeFileAtomic(intentFile(call.copyDir), encodeText(text), {
        mode: 0o600,
        durable: true,
      })
      .pipe(
        Effect.mapError((error) =>
          localFailure(error, `writing private state in the ${privateRootNamed}`),
        ),
      );
  const build = buildIntent(call, state, scan, merged, accepted, publication);
  // The intent names blobs in packs still being cached. A rewrite intent can count at
  // once (recoveryRequired may already be set), so it is written only after they are
  // durable. A commit's intent counts only once `current` names its publication, and
  // the swap waits for this whole effect: it is written alongside them, keeping their
  // fsyncs out of the compare-and-swap window's critical path.
  return publication === null
    ? alongside(build, call.cacheWrites.awaitAll).pipe(Effect.flatMap(([text]) => write(text)))
    : alongside(Effect.flatMap(build, write), call.cacheWrites.awaitAll).pipe(Effect.asVoid);
};

/** The intent's text, after writing the small pack of contents no cached pack holds. */
const buildIntent = (
  call: CopyCall,
  state: CopyState,
  scan: Scan,
  merged: Tree,
  accepted: RemoteView,
  publication: string | null,
): Effect.Effect<string, DomainError> =>
  Effect.gen(function* () {
    // The base the scanned contents (the intent's O) descend from.
    const base = state.recoveryRequired
      ? (yield* recoveryInputs(call, state, yield* loadIntent(call, state), idsOf(scan)))
          .scannedBase
      : mergeBaseOf(state);
    const changes: Array<readonly [string, string | null, string | null]> = [];
    for (const [path, file] of scan) {
      const id = merged.get(path) ?? null;
      if (id !== file.id) changes.push([path, file.id, id]);
    }
    for (const [path, id] of merged) if (!scan.has(path)) changes.push([path, null, id]);
    // Contents already in a cached pack are referenced there; the rest are packed here.
    const known = new Map<string, BlobRef>();
    if (changes.length > 0)
      for (const tree of [accepted.tree, base, state.baseline])
        for (const ref of tree.values()) if (!known.has(ref.id)) known.set(ref.id, ref);
    const missing = new Map<string, Uint8Array>();
    for (const [, before, after] of changes)
      for (const id of [before, after])
        if (id !== null && !known.has(id) && !missing.has(id))
          missing.set(id, yield* call.blobs.load(id));
    if (missing.size > 0) {
      const { bytes, header, blobStart } = encodePack({
        kind: "increment",
        generation: 1,
        publicationId: "intent",
        baseGeneration: 0,
        files: missing,
      });
      const sha = createHash("sha256").update(bytes).digest("hex");
      yield* call.fs
        .writeFileAtomic(packFile(call.copyDir, sha), bytes, { mode: 0o600, durable: true })
        .pipe(
          Effect.mapError((error) =>
            localFailure(error, `writing private state in the ${privateRootNamed}`),
          ),
        );
      for (const put of header.puts)
        known.set(put.id, {
          id: put.id,
          pack: sha,
          offset: blobStart + put.offset,
          size: put.size,
        });
    }
    const refOf = (id: string | null) => (id === null ? null : encodeRef(known.get(id) ?? null));
    const intent = {
      version: intentVersion,
      generation: state.generation,
      head: state.head,
      accepted: delta(state.baseline, accepted.tree).map(([p, r]) => [p, encodeRef(r)]),
      base: delta(state.baseline, base).map(([p, r]) => [p, encodeRef(r)]),
      targets: changes.map(([path, before, after]) => [path, refOf(before), refOf(after)]),
      publication,
    };
    return JSON.stringify(intent);
  });

/** Removes the intent once it has served (best effort: a stale intent is never used). */
export const clearIntent = (call: CopyCall): Effect.Effect<void> =>
  call.fs.removeFile(intentFile(call.copyDir)).pipe(Effect.ignore);
