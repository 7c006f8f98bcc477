import { Cause, Effect, Exit, Option } from "effect";
import { describe, expect, it } from "vitest";
import { instrument, type FaultDecision } from "../../src/adapters/instrumentedObjectStore.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import type { NotebookService, SyncReport } from "../../src/app/Notebook.js";
import type { DomainError } from "../../src/domain/errors.js";
import { decodeManifest, type Manifest } from "../../src/domain/manifest.js";
import type { ObjectStoreService } from "../../src/ports/ObjectStore.js";
import { memNotebook } from "./memNotebook.js";

const author = { name: "test", version: "1" };

/**
 * One process with one notebook service over a store whose every request takes a few
 * milliseconds, so that commits made together wait for each other's batches.
 */
const setup = (decide?: (key: string, method: string) => FaultDecision | undefined) => {
  const counted = instrument(memoryStore.make(), {
    latency: "3 millis",
    decide: (request) => decide?.(request.key, request.method),
  });
  const { notebook, read, write } = memNotebook(counted.store);
  return { notebook, read, write, counted, store: counted.store };
};

const pull = (nb: NotebookService, path: string) => Effect.runPromise(nb.pull({ path }));
const commitExit = (nb: NotebookService, path: string) =>
  Effect.exit(nb.commit({ path, message: `from ${path}`, author }));

const currentOf = async (store: ObjectStoreService): Promise<Manifest> => {
  const object = Option.getOrThrow(await Effect.runPromise(store.get("current")));
  const decoded = decodeManifest(new TextDecoder().decode(object.body));
  if (decoded._tag === "Left") throw new Error("undecodable manifest");
  return decoded.right;
};

const failureOf = (exit: Exit.Exit<SyncReport, DomainError>): DomainError => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure");
  return Option.getOrThrow(Cause.failureOption(exit.cause));
};

const copies = (n: number) => Array.from({ length: n }, (_, i) => `/ws/c${i}`);

describe("group commit through the notebook (one process, several copies)", () => {
  it("publishes concurrent commits of many copies in fewer swaps, losing nothing", async () => {
    const { notebook, read, write, counted, store } = setup();
    const paths = copies(6);
    // Unchanged lines between the edited ones: edits of adjacent lines would conflict.
    const spaced = (line: (i: number) => string) =>
      paths.map((_, i) => `${line(i)}\n-\n-\n`).join("");
    const shared = spaced((i) => `line ${i}`);
    write("/ws/c0/shared.md", shared);
    await pull(notebook, "/ws/c0");
    await Effect.runPromise(notebook.commit({ path: "/ws/c0", message: "seed", author }));
    for (const path of paths.slice(1)) await pull(notebook, path);
    // Each copy adds its own note and changes its own line of the shared one.
    paths.forEach((path, i) => {
      write(`${path}/own-${i}.md`, `note ${i}\n`);
      write(`${path}/shared.md`, shared.replace(`line ${i}\n`, `line ${i} edited by ${i}\n`));
    });
    Effect.runSync(counted.reset);
    const exits = await Effect.runPromise(
      Effect.all(
        paths.map((path) => commitExit(notebook, path)),
        { concurrency: "unbounded" },
      ),
    );
    const generations = exits.map((exit) => (Exit.isSuccess(exit) ? exit.value.generation : -1));
    expect([...generations].sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 7]);
    const swaps = swapsAmong(await Effect.runPromise(counted.requests)).length;
    expect(swaps).toBeLessThan(paths.length);
    const current = await currentOf(store);
    expect(current.generation).toBe(7);
    expect(current.increments.map((d) => d.generation)).toEqual([2, 3, 4, 5, 6, 7]);
    // Every copy converges on every edit.
    const expected = spaced((i) => `line ${i} edited by ${i}`);
    for (const path of paths) {
      await pull(notebook, path);
      expect(read(`${path}/shared.md`)).toBe(expected);
      paths.forEach((_, i) => expect(read(`${path}/own-${i}.md`)).toBe(`note ${i}\n`));
    }
  });

  it("decides overlapping edits against what was accepted, never against a batch's tip", async () => {
    const { notebook, read, write, store } = setup();
    const paths = copies(4);
    write("/ws/c0/x.md", "base\n");
    await pull(notebook, "/ws/c0");
    await Effect.runPromise(notebook.commit({ path: "/ws/c0", message: "seed", author }));
    for (const path of paths.slice(1)) await pull(notebook, path);
    paths.forEach((path, i) => write(`${path}/x.md`, `edit ${i}\n`));
    const exits = await Effect.runPromise(
      Effect.all(
        paths.map((path) => commitExit(notebook, path)),
        { concurrency: "unbounded" },
      ),
    );
    const accepted = exits.flatMap((exit, i) => (Exit.isSuccess(exit) ? [i] : []));
    expect(accepted).toHaveLength(1);
    const winner = accepted[0] ?? -1;
    const current = await currentOf(store);
    expect(current.generation).toBe(2);
    exits.forEach((exit, i) => {
      if (i === winner) return;
      expect(failureOf(exit).code).toBe("CONTENT_CONFLICT");
      // The markers show the accepted edit: the conflict was decided against `current`.
      const text = read(`${paths[i]}/x.md`);
      expect(text).toContain(`edit ${i}\n`);
      expect(text).toContain(`edit ${winner}\n`);
    });
  });

  it("fails only the copy whose upload failed; the others publish, and it can commit again", async () => {
    let failed = false;
    const { notebook, read, write } = setup((key, method) => {
      // The first upload of a generation-3 pack fails, before reaching the store.
      if (failed || method !== "put" || !key.startsWith("packs/increments/3-")) return undefined;
      failed = true;
      return { when: "before", reason: "Unavailable" };
    });
    const paths = copies(4);
    write("/ws/c0/seed.md", "seed\n");
    await pull(notebook, "/ws/c0");
    await Effect.runPromise(notebook.commit({ path: "/ws/c0", message: "seed", author }));
    for (const path of paths.slice(1)) await pull(notebook, path);
    paths.forEach((path, i) => write(`${path}/own-${i}.md`, `note ${i}\n`));
    const exits = await Effect.runPromise(
      Effect.all(
        paths.map((path) => commitExit(notebook, path)),
        { concurrency: "unbounded" },
      ),
    );
    const failures = exits.flatMap((exit, i) => (Exit.isFailure(exit) ? [i] : []));
    expect(failed).toBe(true);
    expect(failures).toHaveLength(1);
    const loser = failures[0] ?? -1;
    const lost = exits[loser];
    if (lost === undefined) throw new Error("no failed commit");
    expect(failureOf(lost).code).toBe("STORAGE_FAILURE");
    const again = await Effect.runPromise(
      notebook.commit({ path: paths[loser] ?? "", message: "again", author }),
    );
    expect(again.generation).toBe(5);
    await pull(notebook, "/ws/c0");
    paths.forEach((_, i) => expect(read(`/ws/c0/own-${i}.md`)).toBe(`note ${i}\n`));
  });
});

/** The swaps of `current` among recorded requests. */
const swapsAmong = (requests: ReadonlyArray<{ readonly method: string; readonly key: string }>) =>
  requests.filter((r) => r.method === "put" && r.key === "current");
