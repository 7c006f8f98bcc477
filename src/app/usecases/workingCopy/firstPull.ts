/**
 * The record of a first pull under way: what a copy that has never been pulled is being
 * given, written into its private directory (`first-pull.json`) before the first file
 * is, removed once the copy's state is recorded.
 *
 * Why: a first pull writes files before any private state exists, so a process killed
 * during it left a directory of notes that nothing could tell from a person's own (a
 * `serve` killed while its session directory was being filled kept that directory
 * forever, as "holding unpublished work"). With this record, the end of a session
 * (sessionEnd.ts) can prove that every file there is what the store published.
 *
 * The next pull of the copy reads it too (pull.ts): the files left exactly as recorded
 * are the notebook's, its merge base, so a first pull stopped by a full disk is completed
 * by the next one without false add/add conflicts. Both only ever conclude "keep" (or
 * "an addition of the copy's own") from a record they cannot read: so it is written
 * without an fsync (a power cut leaving it empty or
 * missing makes the directory kept, never removed), and a record left behind by a
 * process killed after the state was written is never read (a copy with state is
 * judged by its state).
 */
import { join } from "node:path";
import { Effect, Option } from "effect";
import { encodeText } from "../../../domain/content.js";
import type { DomainError } from "../../../domain/errors.js";
import { parseStrictJson } from "../../../domain/strictJson.js";
import type { Tree } from "../../../domain/tree.js";
import type { CopyCall } from "../shared/context.js";
import { localFailure, privateRootNamed } from "../shared/failures.js";

const recordFile = (copyDir: string): string => join(copyDir, "first-pull.json");

/**
 * Version 2 may name a path more than once (see {@link FirstPullRecord}); version 1,
 * written before, names each once and is read the same way.
 */
const recordVersion = 2;

const hex64 = /^[0-9a-f]{64}$/;

/**
 * What an interrupted first pull may have left at each path: every content it was
 * writing there. More than one when a pull after it, into the copy it left, was
 * stopped part way too while the notebook had changed meanwhile: each file is then
 * either as the earlier pull wrote it (not rewritten yet) or as the later one did.
 */
export type FirstPullRecord = ReadonlyMap<string, ReadonlySet<string>>;

/**
 * Records that this never-pulled copy is being given `tree` (path → content id), the
 * accepted state a first pull settles on, beside what an `earlier` interrupted first
 * pull was writing (whose files the copy may still hold). LOCAL_IO when it cannot be
 * written.
 */
export const recordFirstPull = (
  call: CopyCall,
  tree: Tree,
  earlier: FirstPullRecord = new Map(),
): Effect.Effect<void, DomainError> => {
  const entries: Array<readonly [string, string]> = [...tree];
  for (const [path, ids] of earlier)
    for (const id of ids) if (tree.get(path) !== id) entries.push([path, id]);
  return call.fs
    .writeFileAtomic(
      recordFile(call.copyDir),
      encodeText(JSON.stringify({ version: recordVersion, tree: entries })),
      { mode: 0o600, durable: false },
    )
    .pipe(
      Effect.mapError((error) =>
        localFailure(error, `writing private state in the ${privateRootNamed}`),
      ),
    );
};

/** Removes the record once the copy's state names what it was given. Never fails. */
export const forgetFirstPull = (call: CopyCall): Effect.Effect<void> =>
  call.fs.removeFile(recordFile(call.copyDir)).pipe(Effect.ignore);

/**
 * What an interrupted first pull of this copy was writing; `None` when there is no
 * readable record (never fails).
 */
export const loadFirstPull = (call: CopyCall): Effect.Effect<Option.Option<FirstPullRecord>> =>
  call.fs.readFile(recordFile(call.copyDir)).pipe(
    Effect.map((bytes) => {
      const parsed = parseStrictJson(new TextDecoder().decode(bytes));
      if (!parsed.ok) return Option.none<FirstPullRecord>();
      const raw: unknown = parsed.value;
      if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return Option.none();
      if (!("version" in raw) || (raw.version !== 1 && raw.version !== recordVersion))
        return Option.none();
      if (!("tree" in raw) || !Array.isArray(raw.tree)) return Option.none();
      const record = new Map<string, Set<string>>();
      for (const entry of raw.tree) {
        if (!Array.isArray(entry) || entry.length !== 2) return Option.none();
        const [path, id] = entry;
        if (typeof path !== "string" || typeof id !== "string" || !hex64.test(id))
          return Option.none();
        record.set(path, (record.get(path) ?? new Set()).add(id));
      }
      return Option.some<FirstPullRecord>(record);
    }),
    Effect.orElseSucceed(() => Option.none<FirstPullRecord>()),
  );
