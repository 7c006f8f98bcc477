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
 * Only that judgement reads it, and it only ever concludes "keep" from a record it
 * cannot read: so it is written without an fsync (a power cut leaving it empty or
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
import { localFailure } from "../shared/failures.js";

const recordFile = (copyDir: string): string => join(copyDir, "first-pull.json");

const recordVersion = 1;

const hex64 = /^[0-9a-f]{64}$/;

/**
 * Records that this never-pulled copy is being given `tree` (path → content id), the
 * accepted state a first pull settles on. LOCAL_IO when it cannot be written.
 */
export const recordFirstPull = (call: CopyCall, tree: Tree): Effect.Effect<void, DomainError> =>
  call.fs
    .writeFileAtomic(
      recordFile(call.copyDir),
      encodeText(JSON.stringify({ version: recordVersion, tree: [...tree] })),
      { mode: 0o600, durable: false },
    )
    .pipe(Effect.mapError((error) => localFailure(error, "writing private state")));

/** Removes the record once the copy's state names what it was given. Never fails. */
export const forgetFirstPull = (call: CopyCall): Effect.Effect<void> =>
  call.fs.removeFile(recordFile(call.copyDir)).pipe(Effect.ignore);

/**
 * The tree an interrupted first pull of this copy was writing; `None` when there is no
 * readable record (never fails).
 */
export const loadFirstPull = (call: CopyCall): Effect.Effect<Option.Option<Tree>> =>
  call.fs.readFile(recordFile(call.copyDir)).pipe(
    Effect.map((bytes) => {
      const parsed = parseStrictJson(new TextDecoder().decode(bytes));
      if (!parsed.ok) return Option.none<Tree>();
      const raw: unknown = parsed.value;
      if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return Option.none();
      if (!("version" in raw) || raw.version !== recordVersion) return Option.none();
      if (!("tree" in raw) || !Array.isArray(raw.tree)) return Option.none();
      const tree = new Map<string, string>();
      for (const entry of raw.tree) {
        if (!Array.isArray(entry) || entry.length !== 2) return Option.none();
        const [path, id] = entry;
        if (typeof path !== "string" || typeof id !== "string" || !hex64.test(id))
          return Option.none();
        tree.set(path, id);
      }
      return Option.some<Tree>(tree);
    }),
    Effect.orElseSucceed(() => Option.none<Tree>()),
  );
