/**
 * Saves in flight during a scan (docs/working-copy.md, "A save in progress"). Many
 * editors and tools save in steps that leave a note briefly missing, empty or doubled:
 * vim renames the note to `note.md~`, writes a new one and then removes the backup; a
 * shell's `>` truncates before it writes; some tools delete and recreate. A scan that
 * lands between two steps sees a state the person never meant to keep — a deleted note,
 * an empty or half-written one, a backup that is about to go — and a commit would publish it to
 * everyone. The scan notes the few paths that look like such a step ({@link SaveSign});
 * after a short pause each is looked at again, and if any moved on, the scan is taken
 * again (workingCopy.ts). Only these paths cost anything: a scan with none pauses never.
 */
import { Effect, Option } from "effect";
import type { PathInfo, RootedTree } from "../../../ports/FileSystem.js";

/**
 * A path that may be caught mid-save: `Gone`, a note the notebook holds and the last scan
 * saw, missing now; `Written`, a file read by this scan that is empty, modified within
 * the timestamp granularity of the scan (an in-place save written in parts may have
 * more to come), or an editor's working file the notebook does not hold (a backup a
 * save removes at its end), with what the scan saw of it.
 */
export type SaveSign =
  | { readonly _tag: "Gone"; readonly path: string }
  | {
      readonly _tag: "Written";
      readonly path: string;
      readonly seen: Pick<PathInfo, "size" | "mtimeMs" | "ino">;
    };

/**
 * How long a scan with signs of a save waits before looking again: longer than the
 * steps of an editor's save take (vim's fsync of the new file before it removes the
 * backup is the longest), short enough not to be felt.
 */
export const saveSettleMs = 25;

/** How many scans a call takes at most while saves keep moving on (the last one stands). */
export const maxScans = 3;

/**
 * Whether any of `signs` moved on since the scan: a gone note is back, a written file
 * changed or went away. A path that cannot be looked at counts as unchanged (the scan's
 * own reading of it stands). Never fails.
 */
export const movedOn = (tree: RootedTree, signs: ReadonlyArray<SaveSign>): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    for (const sign of signs) {
      const now = yield* tree.info(sign.path).pipe(Effect.orElseSucceed(() => undefined));
      if (now === undefined) continue;
      if (sign._tag === "Gone") {
        if (Option.isSome(now) && now.value.kind === "file") return true;
        continue;
      }
      if (Option.isNone(now)) return true;
      const { size, mtimeMs, ino } = now.value;
      if (size !== sign.seen.size || mtimeMs !== sign.seen.mtimeMs || ino !== sign.seen.ino)
        return true;
    }
    return false;
  });
