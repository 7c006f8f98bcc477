import { Cause, Effect, Exit, Option } from "effect";
import { describe, expect, it } from "vitest";
import * as memFs from "../../src/adapters/memFileSystem.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import type { PathSets } from "../../src/domain/pathSets.js";
import type { ObjectStoreService } from "../../src/ports/ObjectStore.js";
import { openOn } from "./memNotebook.js";

const author = { name: "t", version: "1" };

const open = (
  store: ObjectStoreService,
  fs: ReturnType<typeof memFs.make>["service"],
  pathSets?: PathSets,
) => openOn(store, fs, pathSets === undefined ? {} : { pathSets });

describe("path-set enforcement at commit", () => {
  it("resets exactly the offending files, publishes nothing, and the next commit publishes the rest", async () => {
    const store = memoryStore.make();
    const { service: fs, vol } = memFs.make({ "/ws/.keep": "" });
    const admin = open(store, fs);
    await Effect.runPromise(admin.pull({ path: "/ws/admin" }));
    vol.mkdirSync("/ws/admin/docs", { recursive: true });
    vol.mkdirSync("/ws/admin/agents/x", { recursive: true });
    vol.writeFileSync("/ws/admin/docs/guide.md", "guide\n");
    vol.writeFileSync("/ws/admin/docs/old.md", "old\n");
    vol.writeFileSync("/ws/admin/agents/x/log.md", "x\n");
    await Effect.runPromise(admin.commit({ path: "/ws/admin", message: "seed", author }));

    const agent = open(store, fs, { writable: ["agents/x"], readOnly: ["docs"] });
    await Effect.runPromise(agent.pull({ path: "/ws/a" }));
    vol.writeFileSync("/ws/a/docs/guide.md", "edited\n");
    vol.unlinkSync("/ws/a/docs/old.md");
    vol.writeFileSync("/ws/a/top.md", "new\n");
    vol.writeFileSync("/ws/a/agents/x/log.md", "x\nmore\n");
    const before = Option.getOrThrow(await Effect.runPromise(store.get("current"))).etag;
    const exit = await Effect.runPromiseExit(agent.commit({ path: "/ws/a", message: "m", author }));
    expect(Exit.isFailure(exit)).toBe(true);
    const error = Exit.isFailure(exit)
      ? Option.getOrThrow(Cause.failureOption(exit.cause))
      : undefined;
    expect(error?.code).toBe("READ_ONLY_PATH");
    expect(error?.action).toBe("COMMIT_AGAIN");
    expect(error?.files).toEqual([
      { path: "docs/guide.md", reason: "READ_ONLY", ranges: [] },
      { path: "docs/old.md", reason: "READ_ONLY", ranges: [] },
      { path: "top.md", reason: "NOT_WRITABLE", ranges: [] },
    ]);
    expect(Option.getOrThrow(await Effect.runPromise(store.get("current"))).etag).toBe(before);
    expect(vol.readFileSync("/ws/a/docs/guide.md", "utf8")).toBe("guide\n");
    expect(vol.readFileSync("/ws/a/docs/old.md", "utf8")).toBe("old\n");
    expect(vol.existsSync("/ws/a/top.md")).toBe(false);
    expect(vol.readFileSync("/ws/a/agents/x/log.md", "utf8")).toBe("x\nmore\n");

    const next = await Effect.runPromise(agent.commit({ path: "/ws/a", message: "m", author }));
    expect(next.files).toEqual([{ path: "agents/x/log.md", insertions: 1, deletions: 0 }]);
  });

  it("never refuses a pull", async () => {
    const store = memoryStore.make();
    const { service: fs, vol } = memFs.make({ "/ws/.keep": "" });
    const admin = open(store, fs);
    await Effect.runPromise(admin.pull({ path: "/ws/admin" }));
    vol.writeFileSync("/ws/admin/docs.md", "d\n");
    await Effect.runPromise(admin.commit({ path: "/ws/admin", message: "seed", author }));
    const reader = open(store, fs, { writable: [], readOnly: ["docs.md"] });
    const pulled = await Effect.runPromise(reader.pull({ path: "/ws/r" }));
    expect(pulled.files).toEqual([{ path: "docs.md", insertions: 1, deletions: 0 }]);
  });
});
