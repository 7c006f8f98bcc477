/**
 * Refusing nested working copies: a directory inside another working copy of the same
 * store (or containing one) would publish the same notes under two different paths.
 * Checked when a directory is pulled for the first time.
 */
import { dirname, join } from "node:path";
import { Effect, Option } from "effect";
import { domainError, type DomainError } from "../../../domain/errors.js";
import type { FileSystemService, RootedTree } from "../../../ports/FileSystem.js";
import { localFailure, pathForMessage } from "../shared/failures.js";
import { copyDirectory } from "./privateState.js";

const isCopy = (
  fs: FileSystemService,
  privateRoot: string,
  dir: string,
  store: string,
): Effect.Effect<boolean, DomainError> =>
  fs.info(join(copyDirectory(privateRoot, dir, store), "state.json")).pipe(
    Effect.map(Option.isSome),
    Effect.mapError((error) => localFailure(error, "checking for nested working copies")),
  );

const nested = (message: string): DomainError =>
  domainError({ code: "INVALID_REQUEST", reason: "NESTED_WORKING_COPY", message });

/**
 * The nearest ancestor of `dir` that is a working copy of `store`, if any: one stat (in
 * the private root) per ancestor. Above the workspace root too: the CLI's root is the
 * current directory by default, and `quire pull .` run in a subdirectory of a copy must
 * not make a second copy of the notebook inside the first (a later commit of the outer
 * copy would publish every note again under the subdirectory).
 */
const enclosingCopy = (
  fs: FileSystemService,
  privateRoot: string,
  dir: string,
  store: string,
): Effect.Effect<Option.Option<string>, DomainError> =>
  Effect.gen(function* () {
    for (let ancestor = dir; dirname(ancestor) !== ancestor;) {
      ancestor = dirname(ancestor);
      if (yield* isCopy(fs, privateRoot, ancestor, store)) return Option.some(ancestor);
    }
    return Option.none();
  });

/**
 * Fails with INVALID_REQUEST/NESTED_WORKING_COPY, naming the copy, when an ancestor of
 * `dir` (up to the file system's root) is a working copy of `store`. `dir` need not exist: a
 * call naming a directory or file inside a copy that is not there (a typo, a note since
 * deleted) is told which copy to call, rather than to pull a directory that a pull would
 * refuse. Cost: one stat per ancestor.
 */
export const refuseEnclosingCopy = (
  fs: FileSystemService,
  privateRoot: string,
  dir: string,
  store: string,
): Effect.Effect<void, DomainError> =>
  enclosingCopy(fs, privateRoot, dir, store).pipe(
    Effect.flatMap(
      Option.match({
        onNone: () => Effect.void,
        onSome: (outer) =>
          Effect.fail(
            nested(
              `This directory is inside the working copy ${pathForMessage(outer)}, not a working copy of its own; call this on that copy instead.`,
            ),
          ),
      }),
    ),
  );

/**
 * Fails with INVALID_REQUEST/NESTED_WORKING_COPY when an ancestor of `dir` (up to the
 * file system's root) or a directory below it is already a working copy of `store`. `dir`
 * is the copy's canonical path (for the private-state keys), `tree` the copy itself.
 * Cost: one stat per ancestor and per directory below `dir`.
 */
export const refuseNestedCopies = (
  fs: FileSystemService,
  privateRoot: string,
  dir: string,
  tree: RootedTree,
  store: string,
): Effect.Effect<void, DomainError> =>
  Effect.gen(function* () {
    // Each message names the other copy: a call on `dir` (a pull, or a status of a
    // directory never pulled) belongs to it, or to a directory that does not overlap it.
    yield* refuseEnclosingCopy(fs, privateRoot, dir, store);
    const inner = yield* containedCopy(fs, privateRoot, dir, tree, store);
    if (Option.isSome(inner))
      return yield* Effect.fail(
        nested(
          `This directory contains the working copy ${pathForMessage(join(dir, ...inner.value.split("/")))} of the same notebook; call this on that copy, or pull a directory that does not overlap it.`,
        ),
      );
  });

/**
 * The first directory below `dir` (relative to it) that is a working copy of `store`, if
 * any. Only directories can be copies: listed without looking at any file, one stat each.
 */
const containedCopy = (
  fs: FileSystemService,
  privateRoot: string,
  dir: string,
  tree: RootedTree,
  store: string,
): Effect.Effect<Option.Option<string>, DomainError> =>
  Effect.gen(function* () {
    const directories = yield* tree
      .listDirectories(new Set([".git"]))
      .pipe(Effect.mapError((error) => localFailure(error, "checking for nested working copies")));
    for (const relativePath of directories)
      if (yield* isCopy(fs, privateRoot, join(dir, ...relativePath.split("/")), store))
        return Option.some(relativePath);
    return Option.none();
  });
