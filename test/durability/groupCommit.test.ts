/**
 * Group commit (publishBatch.ts) on the durability harness's store: in-memory here,
 * and the real S3 server when CI runs this directory with QUIRE_DURABILITY_STORE=s3.
 * Concurrent commits of several copies of one process all land, in distinct
 * generations, and every copy converges on every edit; a failed pack upload fails only
 * its own commit.
 */
import { Effect, Exit } from "effect";
import { describe, expect, it } from "vitest";
import { author, fails, manifestOf, pull, world, type World } from "./harness.js";

const copies = (n: number) => Array.from({ length: n }, (_, i) => `/ws/c${i}`);

/** Every copy pulled on a seeded notebook; returns the notebook. */
const seeded = async (w: World, paths: ReadonlyArray<string>, seed: Record<string, string>) => {
  const nb = w.open();
  for (const [name, text] of Object.entries(seed)) w.write(`${paths[0]}/${name}`, text);
  await pull(nb, paths[0]);
  await Effect.runPromise(nb.commit({ path: paths[0] ?? "", message: "seed", author }));
  for (const path of paths.slice(1)) await pull(nb, path);
  return nb;
};

describe("group commit on the harness store", () => {
  it("lands every concurrent commit of one process, in distinct generations, losing nothing", async () => {
    const w = world();
    const paths = copies(5);
    const spaced = (line: (i: number) => string) =>
      paths.map((_, i) => `${line(i)}\n-\n-\n`).join("");
    const nb = await seeded(w, paths, { "shared.md": spaced((i) => `line ${i}`) });
    paths.forEach((path, i) => {
      w.write(`${path}/own-${i}.md`, `note ${i}\n`);
      w.write(
        `${path}/shared.md`,
        spaced((j) => (j === i ? `line ${j} by ${i}` : `line ${j}`)),
      );
    });
    const exits = await Effect.runPromise(
      Effect.all(
        paths.map((path) => Effect.exit(nb.commit({ path, message: path, author }))),
        { concurrency: "unbounded" },
      ),
    );
    const generations = exits.map((exit) => (Exit.isSuccess(exit) ? exit.value.generation : -1));
    expect([...generations].sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6]);
    const current = await manifestOf(w.store);
    expect(current?.generation).toBe(6);
    const expected = spaced((j) => `line ${j} by ${j}`);
    for (const path of paths) {
      await pull(nb, path);
      expect(w.read(`${path}/shared.md`)).toBe(expected);
      paths.forEach((_, i) => expect(w.read(`${path}/own-${i}.md`)).toBe(`note ${i}\n`));
    }
  });

  it("fails only the commit whose pack upload failed; the others land, and it lands next time", async () => {
    const w = world();
    const paths = copies(4);
    const nb = await seeded(w, paths, { "seed.md": "seed\n" });
    paths.forEach((path, i) => w.write(`${path}/own-${i}.md`, `note ${i}\n`));
    w.faults.inject({
      fault: { _tag: "FailBefore", reason: "Unavailable" },
      ops: ["put"],
      key: /^packs\/increments\//,
      skip: 1,
    });
    const exits = await Effect.runPromise(
      Effect.all(
        paths.map((path) => Effect.exit(nb.commit({ path, message: path, author }))),
        { concurrency: "unbounded" },
      ),
    );
    const failed = exits.flatMap((exit, i) => (Exit.isFailure(exit) ? [i] : []));
    expect(failed).toHaveLength(1);
    const index = failed[0] ?? -1;
    const lost = exits[index];
    if (lost === undefined || Exit.isSuccess(lost)) throw new Error("no failed commit");
    expect((await fails(Effect.failCause(lost.cause))).code).toBe("STORAGE_FAILURE");
    const again = await Effect.runPromise(
      nb.commit({ path: paths[index] ?? "", message: "again", author }),
    );
    expect(again.generation).toBe(5);
    await pull(nb, "/ws/c0");
    paths.forEach((_, i) => expect(w.read(`/ws/c0/own-${i}.md`)).toBe(`note ${i}\n`));
  });
});
