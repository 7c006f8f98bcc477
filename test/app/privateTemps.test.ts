/**
 * Temporary files of the private state that a killed process left mid-write (a record's
 * `.intent.json.quire-<id>.tmp`, a pack's `.<sha>.pack.quire-<id>.tmp`) are removed by a
 * later call's prune once they are an hour old; younger ones (a write in flight) stay.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openNotebook } from "../../src/index.js";

const root = mkdtempSync(join(tmpdir(), "quire-private-temps-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Every file below `dir`, recursively, relative to it. */
const filesBelow = (dir: string, prefix = ""): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? filesBelow(join(dir, entry.name), `${prefix}${entry.name}/`)
      : [`${prefix}${entry.name}`],
  );

describe("temporary files left in the private state", () => {
  it("go with a later call once an hour old; a young one stays", async () => {
    const workspace = join(root, "ws");
    mkdirSync(join(workspace, "a"), { recursive: true });
    const privateRoot = join(root, "private");
    const open = () =>
      openNotebook({ store: `file:${join(root, "store")}`, workspaceRoot: workspace, privateRoot });
    let notebook = await open();
    expect(await notebook.pull(join(workspace, "a"))).toMatchObject({ code: "OK" });
    writeFileSync(join(workspace, "a", "n.md"), "one\n");
    expect(await notebook.commit("one", join(workspace, "a"))).toMatchObject({ code: "OK" });
    await notebook.close();

    // Where a killed process would have left them: beside the copy's records and packs.
    const baseline = filesBelow(privateRoot).find((file) => /\/baseline-[^/]*$/.test(file));
    expect(baseline).toBeDefined();
    const copyDir = join(privateRoot, dirname(baseline ?? ""));
    const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
    const left = [
      join(copyDir, ".intent.json.quire-0123456789ab.tmp"),
      join(copyDir, "packs", `.${"a".repeat(64)}.pack.quire-0123456789ab.tmp`),
    ];
    const young = join(copyDir, ".stats.json.quire-ba9876543210.tmp");
    mkdirSync(join(copyDir, "packs"), { recursive: true });
    for (const file of [...left, young]) writeFileSync(file, "partial");
    for (const file of left) utimesSync(file, old, old);

    notebook = await open();
    writeFileSync(join(workspace, "a", "n.md"), "one\ntwo\n");
    expect(await notebook.commit("two", join(workspace, "a"))).toMatchObject({ code: "OK" });
    // close waits for the housekeeping run after the answer, the prune among it.
    await notebook.close();
    const after = filesBelow(copyDir).map((file) => join(copyDir, file));
    for (const file of left) expect(after).not.toContain(file);
    expect(after).toContain(young);
  });
});
