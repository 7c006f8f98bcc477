/**
 * Where content goes that can no longer be put at its own path: a late write into a file
 * quire replaced or removed, a note displaced while a call wrote its name. Beside the note,
 * under a name nothing holds, so that nothing a person wrote is ever dropped.
 */
import { Effect } from "effect";
import type { RootedTree } from "../../../ports/FileSystem.js";

/** How many names beside a note are tried before giving up (each a newcomer's already). */
const attempts = 20;

/**
 * Writes `bytes` beside `path` in `tree` under a new name (`<path>.displaced`, `-2`, …),
 * created only where nothing is, with the directories it needs (a rewrite may have removed
 * them). Never fails: logged as a warning when written, as an error when no name was free.
 */
export const putBeside = (tree: RootedTree, path: string, bytes: Uint8Array): Effect.Effect<void> =>
  Effect.gen(function* () {
    const at = path.lastIndexOf("/");
    if (at >= 0) yield* Effect.either(tree.makeDirectories(path.slice(0, at), 0o755));
    for (let n = 1; n <= attempts; n++) {
      const beside = `${path}.displaced${n === 1 ? "" : `-${n}`}`;
      const made = yield* Effect.either(tree.replaceFile(beside, bytes, { _tag: "Absent" }, 0o644));
      if (made._tag === "Right" && made.right._tag === "Done") {
        yield* Effect.logWarning(
          "a note displaced during the call was put beside it: its name kept changing",
        ).pipe(Effect.annotateLogs({ file: path, keptAs: beside }));
        return;
      }
    }
    yield* Effect.logError("a note displaced during the call could not be put back anywhere").pipe(
      Effect.annotateLogs({ file: path, bytes: bytes.length }),
    );
  });
