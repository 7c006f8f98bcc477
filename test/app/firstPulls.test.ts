/**
 * First pulls take turns: two directories pulled for the first time at once, one inside
 * the other, must not both become working copies of the same notebook (each would find
 * no copy around or below it). Through the library on real files, as an MCP server
 * serving two calls at once runs them, in both orders and with the outer one being the
 * notebook directory.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openNotebook } from "../../src/index.js";

const root = mkdtempSync(join(tmpdir(), "quire-first-pulls-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("first pulls of nested directories at once", () => {
  it("answer OK for one of the two and NESTED_WORKING_COPY for the other, never both OK", async () => {
    const store = `file:${join(root, "store")}`;
    // A notebook with a few notes, so that a pull has work to do between its check and
    // its state record.
    const seed = await openNotebook({
      store,
      workspaceRoot: join(root, "seed"),
      privateRoot: join(root, "seed-private"),
      probe: false,
    });
    mkdirSync(join(root, "seed"));
    expect((await seed.pull(join(root, "seed"))).code).toBe("OK");
    for (let i = 0; i < 20; i++) writeFileSync(join(root, "seed", `n${i}.md`), `${i}\n`);
    expect((await seed.commit("notes", join(root, "seed"))).code).toBe("OK");
    await seed.close();

    for (let round = 0; round < 6; round++) {
      const ws = join(root, `ws${round}`);
      const inner = join(ws, "n", "m");
      mkdirSync(inner, { recursive: true });
      const notebook = await openNotebook({
        store,
        workspaceRoot: ws,
        privateRoot: join(root, `private${round}`),
        probe: false,
      });
      const outer = round % 3 === 0 ? undefined : round % 3 === 1 ? ws : join(ws, "n");
      const calls =
        round % 2 === 0
          ? [notebook.pull(outer), notebook.pull(inner)]
          : [notebook.pull(inner), notebook.pull(outer)];
      const answers = await Promise.all(calls);
      const shapes = answers.map((a) => `${a.code}/${"reason" in a ? String(a.reason) : "-"}`);
      expect(shapes.sort(), `round ${round}`).toEqual([
        "INVALID_REQUEST/NESTED_WORKING_COPY",
        "OK/-",
      ]);
      await notebook.close();
    }
  });

  it(
    "many first pulls of sibling directories at once all answer OK (three or more hung: the turn leaked)",
    { timeout: 60_000 },
    async () => {
      const store = `file:${join(root, "store-many")}`;
      const ws = join(root, "many");
      const notebook = await openNotebook({
        store,
        workspaceRoot: ws,
        privateRoot: join(root, "private-many"),
        probe: false,
      });
      for (let round = 0; round < 3; round++) {
        const dirs = Array.from({ length: 5 }, (_, i) => join(ws, `r${round}`, `c${i}`));
        for (const dir of dirs) mkdirSync(dir, { recursive: true });
        const answers = await Promise.all(dirs.map((dir) => notebook.pull(dir)));
        expect(
          answers.map((a) => a.code),
          `round ${round}`,
        ).toEqual(dirs.map(() => "OK"));
      }
      await notebook.close();
    },
  );
});
