/**
 * Calls on one working copy run in the order they arrived (docs/mcp.md "Calls in
 * flight"). A client may send `notes_pull` and then `notes_commit` for the same copy
 * without waiting for the first answer; each call resolves its copy and does other
 * asynchronous work before it queues for the copy's permit (usecases/notebookLayer.ts),
 * so without this the commit could overtake the pull and answer NOT_PULLED. The queue is
 * keyed by the `path` argument tidied lexically (`/w/a/`, `/w//a` and `/w/x/../a` are one
 * key; absent, empty, not a string or the notebook directory's own path: the notebook
 * directory), so spellings that differ only so are ordered too; calls on other copies
 * still run in parallel. Two spellings through a symlink are not recognised (that needs
 * the file system, and the key is taken synchronously on arrival); ordering two paths
 * that turn out different only serialises them, so the tidying may err that way.
 * Plain promises: it runs in the SDK's request handler.
 */
import * as NodePath from "node:path";

/** A call's place in its queue. */
export interface Turn {
  /** Resolves once every earlier call with the same key has finished. Never rejects. */
  readonly ready: Promise<void>;
  /**
   * Marks this call finished (idempotent): the next one with the same key may start once
   * every earlier one has finished too.
   */
  readonly done: () => void;
}

/** Queues of calls, one per key; a key is forgotten once its last call is done. */
export interface ArrivalOrder {
  /** Takes the next place in `key`'s queue, now (synchronously, in arrival order). */
  readonly enter: (key: string) => Turn;
  /** How many keys have calls queued or running (for tests: bounded by the calls in flight). */
  readonly size: () => number;
}

/** A fresh set of queues. */
export const makeArrivalOrder = (): ArrivalOrder => {
  const tails = new Map<string, Promise<void>>();
  return {
    enter: (key) => {
      const ready = tails.get(key) ?? Promise.resolve();
      let finish = (): void => undefined;
      const finished = new Promise<void>((resolve) => (finish = resolve));
      const tail = ready.then(() => finished);
      tails.set(key, tail);
      // Forgotten once the tail itself has settled (every earlier call done too) and no
      // later call joined: a call that ends while an earlier one still runs (a queued call
      // cancelled) must leave the queue in place, or the next call would not wait.
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return { ready, done: finish };
    },
    size: () => tails.size,
  };
};

/**
 * The queue key of a `tools/call`'s arguments: its `path` tidied lexically (posix
 * normalisation, no trailing slash), or "" without one and for `notebookDirectory` itself.
 * Never fails: a path the call will refuse still gets a key.
 */
export const arrivalKey = (args: unknown, notebookDirectory: string): string => {
  if (typeof args !== "object" || args === null || !("path" in args)) return "";
  const path: unknown = args.path;
  if (typeof path !== "string" || path === "") return "";
  const key = tidy(path);
  return key === tidy(notebookDirectory) ? "" : key;
};

/** `path` normalised (`.`, `..`, `//` resolved lexically) without a trailing slash. */
const tidy = (path: string): string => {
  const normal = NodePath.posix.normalize(path);
  return normal.length > 1 && normal.endsWith("/") ? normal.slice(0, -1) : normal;
};
