/**
 * What `quire log` reads for a short answer (docs/history.md "How long, and what it
 * costs"): it replays the active chain's packs to find the publications, but reads the
 * contents and counts the lines (SPEC §6.4) only of the files of the publications it
 * lists — `log -n 1` (or `notes_log` asking for what is new) after a long active chain
 * counts one publication's files, not every publication's since the last checkpoint
 * (up to --checkpoint-packs of them). The line counter is wrapped to count its calls.
 */
import { Effect } from "effect";
import { describe, expect, it, vi } from "vitest";
import { memNotebook } from "./memNotebook.js";

const calls = vi.hoisted(() => ({ count: 0 }));
vi.mock("../../src/domain/diffstat.js", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../src/domain/diffstat.js")>();
  return {
    ...original,
    countChanges: (...args: Parameters<typeof original.countChanges>) => {
      calls.count += 1;
      return original.countChanges(...args);
    },
  };
});

const author = { name: "test", version: "1" };

describe("quire log on a long active chain", () => {
  it("counts the lines of the listed publications' files only", async () => {
    const { notebook, write } = memNotebook();
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    const publications = 40;
    for (let i = 1; i <= publications; i++) {
      write(`/ws/a/n${i % 4}.md`, `line ${i}\n`);
      await Effect.runPromise(notebook.commit({ path: "/ws/a", message: `m${i}`, author }));
    }
    calls.count = 0;
    const one = await Effect.runPromise(notebook.log({ path: "/ws/a", limit: 1 }));
    expect(one.publications.map((p) => [p.message, p.files])).toEqual([
      ["m40", [{ path: "n0.md", change: "modified", insertions: 1, deletions: 1 }]],
    ]);
    expect(calls.count).toBe(1);

    calls.count = 0;
    const filtered = await Effect.runPromise(
      notebook.log({ path: "/ws/a", limit: 2, file: "n1.md" }),
    );
    expect(filtered.publications.map((p) => p.message)).toEqual(["m37", "m33"]);
    expect(calls.count).toBe(2);

    // Every publication listed: every one counted, the first (the checkpoint) as added.
    calls.count = 0;
    const all = await Effect.runPromise(notebook.log({ path: "/ws/a", limit: 100 }));
    expect(all.publications).toHaveLength(publications);
    expect(all.publications.at(-1)?.files).toEqual([
      { path: "n1.md", change: "added", insertions: 1, deletions: 0 },
    ]);
    expect(calls.count).toBe(publications);
  });
});
