/**
 * The use-case service every surface (MCP, CLI, library) calls: pull and commit of a
 * working copy. STUB of the contract; the implementation lives in src/app/usecases.
 */
import { Context, type Effect } from "effect";
import type { DomainError } from "../domain/errors.js";
import type { CopyDiff, CopyStatus } from "../domain/copyStatus.js";
import type { HistoryLog, LogRequest, RestoredFiles, ShownPublication } from "../domain/history.js";
import type { UnlistedFiles } from "../domain/envelope.js";
import type { FileStat } from "../domain/tree.js";
import type { FileChange } from "../domain/treeDiff.js";

/** Who is publishing: the MCP client's name/version, or `cli` with the OS user. */
export interface Author {
  readonly name: string;
  readonly version: string;
}

/** A request to pull. `path` is the caller's raw path (may be omitted/empty/`~/…`). */
export interface PullRequest {
  readonly path?: string;
}

/** A request to commit. */
export interface CommitRequest {
  readonly path?: string;
  readonly message: string;
  readonly author: Author;
}

/** The successful result of pull or commit. */
export interface SyncReport {
  /** The resolved absolute working-copy directory. */
  readonly path: string;
  /** The accepted remote generation after the operation. */
  readonly generation: number;
  /** Per-file line counts, sorted by path. */
  readonly files: ReadonlyArray<FileStat>;
  /**
   * Commit only: what the commit wrote into the working copy from others' publications
   * (the merge's changes to the copy; a file held as its person saved it is not among
   * them), sorted by path; absent when nothing came in. The
   * MCP result does not carry it (SPEC §2.3); the CLI report lists it.
   */
  readonly incoming?: ReadonlyArray<FileChange>;
  /**
   * Set when the call (a commit, or a pull of a copy already pulled) first completed an
   * earlier commit of this copy whose process stopped after the notebook accepted its
   * publication, before the copy was settled — that publication's generation. A
   * commit's `files` are its own publication's; a pull's, what it changed on disk.
   */
  readonly interruptedCommit?: { readonly generation: number };
  /**
   * Files the call changed beyond those `files` lists: set only by a call another
   * `serve` process ran for this one whose answer had more files than it may carry
   * (share/protocol.ts, encodeAnswer). Their number and line counts; `files` lists the
   * first by path.
   */
  readonly unlisted?: UnlistedFiles;
}

/**
 * The operations on working copies. Every call also fails with INVALID_REQUEST/
 * INVALID_ARGUMENT when its request does not have the shape its type says (a call from
 * plain JavaScript): the effect fails, the call never throws.
 */
export interface NotebookService {
  /** The server's own notebook directory (what an omitted `path` means). */
  readonly notebookDirectory: string;
  /** SPEC §6.1. */
  readonly pull: (request: PullRequest) => Effect.Effect<SyncReport, DomainError>;
  /** SPEC §6.2. */
  readonly commit: (request: CommitRequest) => Effect.Effect<SyncReport, DomainError>;
  /**
   * SPEC §11: the notebook's publications, newest first (usecases/history/log.ts), with
   * the working copy's resolved directory. Read-only: it changes nothing in the copy or
   * the store. INVALID_REQUEST/NOT_PULLED for a copy never pulled; STORAGE_INTEGRITY/
   * MANIFEST_INVALID when `current` does not continue the history the copy has seen.
   */
  readonly log: (
    request: LogRequest & { readonly path?: string },
  ) => Effect.Effect<HistoryLog & { readonly path: string }, DomainError>;
  /**
   * SPEC §11: what the working copy holds unpublished, and how far `current` is ahead
   * (usecases/history/status.ts). Publishes nothing and writes no note.
   * INVALID_REQUEST/NOT_PULLED for a copy never pulled.
   */
  readonly status: (request: {
    readonly path?: string;
  }) => Effect.Effect<CopyStatus & { readonly path: string }, DomainError>;
  /**
   * SPEC §11: the unified diff of the working copy's unpublished changes, only of
   * `files` (notebook paths or directories) when any are given
   * (usecases/history/diff.ts). Reads no store; writes no note. NOT_PULLED for a copy
   * never pulled.
   */
  readonly diff: (request: {
    readonly path?: string;
    readonly files: ReadonlyArray<string>;
  }) => Effect.Effect<CopyDiff & { readonly path: string }, DomainError>;
  /**
   * SPEC §11: the publication at `generation` with the diff of each file it changed
   * (only of `files` when any are given; usecases/history/show.ts), read through the
   * working copy's cache. INVALID_REQUEST/GENERATION_PRUNED when its content is gone,
   * INVALID_ARGUMENT when no publication has that generation, NOT_PULLED for a copy
   * never pulled, STORAGE_INTEGRITY/MANIFEST_INVALID when `current` does not continue
   * the history the copy has seen.
   */
  readonly show: (request: {
    readonly path?: string;
    readonly generation: number;
    readonly files: ReadonlyArray<string>;
  }) => Effect.Effect<ShownPublication & { readonly path: string }, DomainError>;
  /**
   * SPEC §11: writes `files` as they were at `generation` into the working copy
   * (usecases/history/restore.ts); published by the next commit.
   * INVALID_REQUEST/UNPUBLISHED_CHANGES when that would replace unpublished changes
   * without `force`; PULL_NEEDED when a merge the copy must still make would undo it;
   * GENERATION_PRUNED when the content is gone.
   */
  readonly restore: (request: {
    readonly path?: string;
    readonly generation: number;
    readonly files: ReadonlyArray<string>;
    readonly force: boolean;
  }) => Effect.Effect<RestoredFiles & { readonly path: string }, DomainError>;
  /**
   * SPEC §11: applies the inverse of the publication at `generation` to the working copy
   * as a three-way merge (usecases/history/restore.ts); conflicts are written as a pull
   * writes them and answered CONTENT_CONFLICT/MERGE_CONFLICT, whose `changed` lists
   * every file written (the clean ones too) and `held` those saved during the call;
   * PULL_NEEDED when the copy has not pulled `generation` yet or a merge it must still
   * make would undo the revert.
   */
  readonly revert: (request: {
    readonly path?: string;
    readonly generation: number;
  }) => Effect.Effect<RestoredFiles & { readonly path: string }, DomainError>;
  /**
   * Removes the working copy at `path` (default: the notebook directory) and its private
   * state if it holds nothing unpublished (see `publishedOnly` in
   * usecases/workingCopy/sessionEnd.ts): `true` when removed, `false` when kept (also for
   * a directory that does not exist). A note saved or a file added while it is removed
   * stays, with what it needs to be judged again; only published notes are removed then.
   * For `serve`'s own session directory at shutdown. Fails only when the copy cannot be
   * inspected or removing it failed part-way (then only published notes were lost from
   * the directory).
   */
  readonly discardIfPublished: (path?: string) => Effect.Effect<boolean, DomainError>;
  /**
   * Only on a `serve` process that shares itself (app/share): stops taking other
   * processes' calls and sending its own, lets the calls it runs for others finish for
   * up to the grace, then interrupts them (their callers run them themselves). `serve`
   * calls it as soon as it is asked to stop. Never fails.
   */
  readonly stopSharing?: Effect.Effect<void>;
}

/** The Notebook service tag. */
export class Notebook extends Context.Tag("quire/Notebook")<Notebook, NotebookService>() {}
