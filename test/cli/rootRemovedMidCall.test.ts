/**
 * A workspace root removed while a call works in it (`rm -rf` of the directory, a tmp
 * cleaner): the opening check had passed, so the writes after it failed with ENOENT and
 * the call answered ENGINE_FAILED/LOCAL_IO, retryable — and every retry failed the same
 * way. It is ENGINE_FAILED/ROOT_CHANGED, as when the root is found gone at the opening.
 * The window: a fault-injection delay on the store's pack reads (docs/durability.md),
 * after the copy's lock is taken (so after the root was opened).
 */
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { assertBuilt, makeSandbox, runQuire, type Sandbox } from "./quireProcess.js";

let box: Sandbox;
beforeEach(() => {
  assertBuilt();
  box = makeSandbox();
});
afterEach(() => box.cleanup());

const settings = (workspace: string, privateRoot: string) => [
  "--store",
  `file:${box.store}`,
  "--workspace-root",
  workspace,
  "--private-root",
  privateRoot,
];

/** Resolves once a copy's lock file exists below `privateRoot`. */
const copyLocked = async (privateRoot: string): Promise<void> => {
  const copies = path.join(privateRoot, "copies");
  for (;;) {
    if (existsSync(copies))
      for (const copy of readdirSync(copies))
        if (existsSync(path.join(copies, copy, "lock"))) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

it("a pull whose workspace root is removed mid-call answers ROOT_CHANGED, not LOCAL_IO", async () => {
  // A notebook with a note, published from another workspace.
  const first = path.join(box.root, "first");
  mkdirSync(first);
  const own = [...settings(first, path.join(box.root, "p1"))];
  expect(
    (await runQuire(["pull", path.join(first, "nb"), ...own], { cwd: box.root, env: box.env }))
      .code,
  ).toBe(0);
  writeFileSync(path.join(first, "nb", "a.md"), "a\n");
  const committed = await runQuire(["commit", path.join(first, "nb"), "-m", "a", ...own], {
    cwd: box.root,
    env: box.env,
  });
  expect(committed.code, committed.stderr).toBe(0);

  const workspace = path.join(box.root, "second");
  mkdirSync(workspace);
  const privateRoot = path.join(box.root, "p2");
  const pulling = runQuire(
    ["pull", path.join(workspace, "nb"), ...settings(workspace, privateRoot)],
    {
      cwd: box.root,
      env: { ...box.env, QUIRE_FAULT_INJECTION: "get:packs/:delay-4000:1" },
    },
  );
  await copyLocked(privateRoot);
  rmSync(workspace, { recursive: true, force: true });
  const pulled = await pulling;
  // The answer, without the log records (which keep the host's cause, ENOENT).
  const answer = (pulled.stdout + pulled.stderr)
    .split("\n")
    .filter((line) => !line.startsWith("ts="))
    .join("\n");
  expect(answer).toContain("ENGINE_FAILED · ROOT_CHANGED");
  expect(answer).toContain("retryable: false");
  expect(pulled.code).toBe(1);
  expect(existsSync(workspace)).toBe(false);
});
