/**
 * A commit whose process stopped after `current` accepted its publication, before the
 * working copy was settled (the `after-cas` failpoint, as a crash): the next commit
 * through a real `quire` process or a real `quire serve` settles the copy first, and so
 * does a pull. The CLI's answer must say so — that an earlier commit's publication had landed, with its
 * generation — rather than only "0 files changed", which reads as "nothing of yours was
 * published"; the MCP result keeps SPEC §2.3's shape, its generation the landed one.
 */
import { homedir } from "node:os";
import * as path from "node:path";
import { Effect, Exit, Logger, LogLevel } from "effect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as fileObjectStore from "../../src/adapters/fileObjectStore.js";
import * as idGenerator from "../../src/adapters/idGenerator.js";
import * as nodeFileSystem from "../../src/adapters/nodeFileSystem.js";
import { makeNotebook } from "../../src/app/usecases/notebookLayer.js";
import {
  assertBuilt,
  commit,
  makeWorld,
  pull,
  read,
  runCli,
  write,
  type World,
} from "../helpers/cli.js";
import { call, serve } from "../serve/serve.js";

beforeAll(assertBuilt);

const worlds: World[] = [];
afterAll(() => {
  for (const world of worlds) world.cleanup();
});

/**
 * A world whose copy `a` published x.md at generation 1, then had its commit of a second
 * line stopped right after `current` accepted it (generation 2): the copy is unsettled.
 */
const interrupted = async () => {
  const world = makeWorld();
  worlds.push(world);
  const a = world.copy("a");
  expect((await pull(world, a)).code).toBe(0);
  write(a, "x.md", "one\n");
  expect((await commit(world, a, "one")).code).toBe(0);
  write(a, "x.md", "one\ntwo\n");
  const store = await Effect.runPromise(fileObjectStore.make({ root: world.store }));
  const notebook = await Effect.runPromise(
    makeNotebook({
      store,
      fs: nodeFileSystem.make(),
      ids: idGenerator.make(),
      // As the CLI run in `world.ws` configures it, so that the copy's private state is one.
      options: {
        workspaceRoot: world.ws,
        notebookDirectory: world.ws,
        privateRoot: world.privateRoot,
        storeDirectory: world.store,
        homeDirectory: homedir(),
        commitRetries: 8,
        checkpointPacks: 1024,
        retainedCheckpoints: 1,
        failpoint: (stage) => (stage === "after-cas" ? Effect.interrupt : Effect.void),
      },
    }),
  );
  const stopped = await Effect.runPromiseExit(
    notebook
      .commit({ path: a, message: "two", author: { name: "test", version: "" } })
      .pipe(Logger.withMinimumLogLevel(LogLevel.None)),
  );
  expect(Exit.isInterrupted(stopped)).toBe(true);
  const status = await runCli(world, ["status", a]);
  expect(status.stdout).toContain("an interrupted call left this copy to be resynchronised");
  return { world, a };
};

/** The line naming the completed commit, generation 2, in the CLI's report. */
const completedTwo =
  "completed an earlier commit of this copy, interrupted after the notebook accepted it: generation 2 (quire show PATH 2 lists its files)";

describe("a commit that finds an earlier commit of its copy interrupted after its publication", () => {
  it("quire commit says it completed that commit and names its generation, not just 0 files changed", async () => {
    const { world, a } = await interrupted();
    const again = await commit(world, a, "two, again");
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(
      ["OK  generation 2", completedTwo, "nothing more to publish: 0 files changed", ""].join("\n"),
    );
    expect(read(a, "x.md")).toBe("one\ntwo\n");
    // Settled: the next commit has nothing to complete and says the usual.
    const idle = await commit(world, a, "nothing");
    expect(idle.stdout).toBe("OK  generation 2\n0 files changed\n");
  });

  it("with new edits too, quire commit reports its own publication and the completed one", async () => {
    const { world, a } = await interrupted();
    write(a, "x.md", "one\ntwo\nthree\n");
    const again = await commit(world, a, "three");
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(
      ["OK  generation 3", completedTwo, "  x.md  +1", "1 file changed, 1 insertion(+)", ""].join(
        "\n",
      ),
    );
  });

  it("quire pull says it completed that commit too, and names its generation", async () => {
    const { world, a } = await interrupted();
    const pulled = await pull(world, a);
    expect(pulled.code, pulled.stderr).toBe(0);
    expect(pulled.stdout).toBe(
      ["OK  generation 2", completedTwo, "0 files changed", ""].join("\n"),
    );
    expect(read(a, "x.md")).toBe("one\ntwo\n");
    const again = await pull(world, a);
    expect(again.stdout).toBe("OK  generation 2\n0 files changed\n");
  });

  it("notes_commit through quire serve settles it and keeps SPEC §2.3's result shape", async () => {
    const { world, a } = await interrupted();
    const served = await serve(
      [
        "--store",
        `file:${world.store}`,
        "--workspace-root",
        world.ws,
        "--private-root",
        world.privateRoot,
        "--no-share",
      ],
      { env: { ...world.env, LOG_LEVEL: "warn" }, cwd: world.ws },
    );
    try {
      const result = await call(served, "notes_commit", { path: a, message: "two, again" });
      expect(result.isError, result.text).toBe(false);
      // The generation names the landed publication; the object has no other key.
      expect(result.structured).toMatchObject({
        code: "OK",
        generation: 2,
        filesChanged: 0,
        files: [],
      });
      expect(Object.keys(result.structured ?? {}).sort()).toEqual(
        [
          "code",
          "deletions",
          "files",
          "filesChanged",
          "generation",
          "insertions",
          "path",
          "readOnly",
          "writable",
        ].sort(),
      );
    } finally {
      await served.close();
    }
    expect(path.isAbsolute(a)).toBe(true);
  });
});
