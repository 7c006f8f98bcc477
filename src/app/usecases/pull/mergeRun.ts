/**
 * Runs the three-way merge of a working copy against the accepted state: the pure
 * tree plan, then a text (or union) merge of each file both sides changed, loading only
 * the contents those files need.
 */
import { Effect, Either } from "effect";
import {
  attributesPath,
  mergePolicyOf,
  noAttributes,
  type MergePolicy,
  type MergeRules,
} from "../../../domain/attributes.js";
import {
  contentId,
  countLinesOfBytes,
  decodeText,
  encodeText,
  maxFileBytes,
  textProblem,
} from "../../../domain/content.js";
import { diffTrees } from "../../../domain/treeDiff.js";
import { domainError, type DomainError, type FileIssue } from "../../../domain/errors.js";
import { findMarkerBlocks } from "../../../domain/markers.js";
import { mergeText, mergeUnion } from "../../../domain/textMerge.js";
import { planTreeMerge } from "../../../domain/treeMerge.js";
import { compareCodeUnits } from "../../../domain/paths.js";
import type { LineRange, Tree } from "../../../domain/tree.js";
import type { BlobSource } from "../workingCopy/blobs.js";
import { attributesInForce } from "./mergeAttributes.js";
import { forEachPooled } from "../shared/pooled.js";

/** The merged tree and every conflict (structural and textual), sorted by path. */
export interface MergeOutcome {
  readonly merged: Tree;
  readonly conflicts: ReadonlyArray<FileIssue>;
  /**
   * Files the merge joined cleanly into more than {@link maxFileBytes} (each side was
   * within the limit), sorted: a commit must not publish them (oversizedMerge.ts).
   */
  readonly oversized: ReadonlyArray<string>;
}

const notText = (): DomainError =>
  domainError({
    code: "STORAGE_INTEGRITY",
    reason: "PACK_INVALID",
    message: "Stored content is not UTF-8 text.",
  });

/** Stored content as notebook text; content that is not text is an integrity failure. */
export const textOf = (bytes: Uint8Array): Either.Either<string, DomainError> => {
  const decoded = decodeText(bytes);
  return "text" in decoded ? Either.right(decoded.text) : Either.left(notText());
};

/**
 * The line count of stored content, with the check of {@link textOf} (content that is
 * not text is an integrity failure) but without decoding it.
 */
export const lineCountOf = (bytes: Uint8Array): Either.Either<number, DomainError> =>
  textProblem(bytes) === undefined
    ? Either.right(countLinesOfBytes(bytes))
    : Either.left(notText());

/** Loads content as notebook text; stored content that is not text is an integrity failure. */
export const loadText = (blobs: BlobSource, id: string): Effect.Effect<string, DomainError> =>
  Effect.flatMap(blobs.load(id), textOf);

/**
 * A clean merge whose text holds more complete marker blocks than either side held —
 * half a block from each side, joined (SPEC §6.3: a commit never accepts one, wherever
 * it came from) — answered as conflicting at those blocks, so that it is reported and written
 * like any conflict instead of published (every block of the file is listed); found by
 * an adversarial probe, where two agents' appends to a union journal formed one. A
 * merge that also conflicts lists the formed block beside its conflicts. Only merged
 * files are scanned, and the sides only when the merged text holds more blocks than
 * the merge's conflicts.
 */
const withFormedBlocks = (
  merge: { readonly text: string; readonly conflicts: ReadonlyArray<LineRange> },
  localText: string,
  remoteText: string,
): { readonly text: string; readonly conflicts: ReadonlyArray<LineRange> } => {
  if (merge.text === localText || merge.text === remoteText) return merge;
  const blocks = findMarkerBlocks(merge.text);
  // The merge's own conflicts are blocks of the text; only blocks beyond them can have formed.
  if (blocks.length <= merge.conflicts.length) return merge;
  // Blocks a side already held (an older release could publish them) are not new; more
  // blocks than the conflicts and either side held means one formed. With conflicts, the
  // formed one is listed beside them, or only the next commit would name it.
  const held = Math.max(findMarkerBlocks(localText).length, findMarkerBlocks(remoteText).length);
  if (blocks.length <= merge.conflicts.length + held) return merge;
  return { text: merge.text, conflicts: blocks };
};

/** A file both sides changed (or both added, `base` undefined), to merge as text. */
interface TextMergeJob {
  readonly path: string;
  readonly base: string | undefined;
  readonly local: string;
  readonly remote: string;
}

/**
 * Merges `local` and `remote` edits of `base`. Conflicting text is merged with marker
 * blocks (TEXT_CONFLICT, or ADD_ADD when both added the file), except — with `rules`
 * `attributes`, the default — in files the attributes in force (mergeAttributes.ts) give
 * `merge=union`: those keep both sides' lines and never conflict as text (an add/add
 * still merges as text). The merged bytes are registered with `blobs`. Never publishes or
 * writes anything. The attributes are read only when a file other than
 * `.quireattributes` needs a text merge with a base.
 */
export const runMerge = (
  base: Tree,
  local: Tree,
  remote: Tree,
  blobs: BlobSource,
  rules: MergeRules = "attributes",
): Effect.Effect<MergeOutcome, DomainError> =>
  Effect.gen(function* () {
    // The common cases cost one comparison pass: nothing happened on one side.
    if (diffTrees(base, remote).length === 0)
      return { merged: local, conflicts: [], oversized: [] };
    if (diffTrees(base, local).length === 0)
      return { merged: remote, conflicts: [], oversized: [] };
    const plan = planTreeMerge(base, local, remote);
    const merged = new Map<string, string>();
    const oversized: Array<string> = [];
    // A moved file's entry says where each side now is (movedTo, side, keptAs): the
    // caller must learn where its note went, not just that something clashed.
    const conflicts: FileIssue[] = plan.conflicts.map((c) => ({
      path: c.path,
      reason: c.reason === "CASE_COLLISION" ? "CASE_CONFLICT" : c.reason,
      ranges: [],
      ...(c.movedTo === undefined ? {} : { movedTo: c.movedTo }),
      ...(c.side === undefined ? {} : { side: c.side }),
      ...(c.keptAs === undefined ? {} : { keptAs: c.keptAs }),
    }));
    const textMerges: Array<TextMergeJob> = [];
    let attributesJob: TextMergeJob | undefined;
    for (const [path, entry] of plan.entries) {
      if (entry._tag === "Resolved") merged.set(path, entry.id);
      else {
        const job = { path, base: entry.base, local: entry.local, remote: entry.remote };
        if (path === attributesPath) attributesJob = job;
        else textMerges.push(job);
      }
    }
    /** Merges one file; answers its merged text and whether it conflicted. */
    const mergeFile = (job: TextMergeJob, policy: MergePolicy) =>
      Effect.gen(function* () {
        const baseText = job.base === undefined ? "" : yield* loadText(blobs, job.base);
        const localText = yield* loadText(blobs, job.local);
        const remoteText = yield* loadText(blobs, job.remote);
        const merge =
          policy === "union" && job.base !== undefined
            ? { text: mergeUnion(baseText, localText, remoteText), conflicts: [] }
            : mergeText(baseText, localText, remoteText);
        const result = withFormedBlocks(merge, localText, remoteText);
        const bytes = encodeText(result.text);
        const id = contentId(bytes);
        blobs.addBytes(id, bytes);
        merged.set(job.path, id);
        if (result.conflicts.length === 0 && bytes.length > maxFileBytes) oversized.push(job.path);
        if (result.conflicts.length > 0) {
          conflicts.push({
            path: job.path,
            reason: job.base === undefined ? "ADD_ADD" : "TEXT_CONFLICT",
            ranges: result.conflicts,
          });
        }
        return { text: result.text, conflicted: result.conflicts.length > 0 };
      });
    // The attributes file is merged first, as text: its result decides the others.
    const mergedAttributes =
      attributesJob === undefined ? undefined : yield* mergeFile(attributesJob, "text");
    const attributes =
      rules === "attributes" && textMerges.some((job) => job.base !== undefined)
        ? yield* attributesInForce(plan, local, mergedAttributes, (id) => loadText(blobs, id))
        : noAttributes;
    yield* forEachPooled(textMerges, (job) => mergeFile(job, mergePolicyOf(attributes, job.path)), {
      workers: 4,
      itemsPerWorker: 1,
    });
    conflicts.sort((a, b) => compareCodeUnits(a.path, b.path));
    oversized.sort(compareCodeUnits);
    return { merged, conflicts, oversized };
  });
