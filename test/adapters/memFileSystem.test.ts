import { describe, expect, it } from "@effect/vitest";
import { Effect, Option } from "effect";
import { make } from "../../src/adapters/memFileSystem.js";
import { FileSystem } from "../../src/ports/FileSystem.js";
import { layer } from "../../src/adapters/memFileSystem.js";
import { runFileSystemContract } from "../contract/fileSystemContract.js";
import { runRootedTreeContract } from "../contract/rootedTreeContract.js";

runRootedTreeContract("memfs", async () => {
  const { service, vol } = make();
  vol.mkdirSync("/work/base/tree", { recursive: true });
  vol.mkdirSync("/work/base/outside", { recursive: true });
  const list = (directory: string, prefix = ""): string[] =>
    vol
      .readdirSync(directory)
      .map(String)
      .flatMap((name) => {
        const path = `${directory}/${name}`;
        const relative = prefix === "" ? name : `${prefix}/${name}`;
        return vol.lstatSync(path).isDirectory() ? [relative, ...list(path, relative)] : [relative];
      });
  return {
    fs: service,
    base: "/work/base",
    host: {
      write: (path, text) => vol.writeFileSync(path, text),
      read: (path) => String(vol.readFileSync(path, "utf8")),
      exists: (path) => vol.existsSync(path),
      mkdir: (path) => vol.mkdirSync(path, { recursive: true }),
      rename: (from, to) => vol.renameSync(from, to),
      symlink: (target, path) => vol.symlinkSync(target, path),
      chmod: (path, mode) => vol.chmodSync(path, mode),
      mode: (path) => Number(vol.lstatSync(path).mode) & 0o7777,
      list: (directory) => list(directory).sort(),
      openForWrite: (path) => vol.openSync(path, "r+"),
      overwrite: (descriptor, text) => {
        vol.ftruncateSync(descriptor, 0);
        vol.writeSync(descriptor, text, 0);
      },
      close: (descriptor) => vol.closeSync(descriptor),
      makeChain: (directory, segments, file) => {
        const deepest = [directory, ...segments].join("/");
        vol.mkdirSync(deepest, { recursive: true });
        if (file !== undefined) vol.writeFileSync(`${deepest}/${file}`, "deep\n");
      },
    },
    longPaths: true,
    cleanup: async () => vol.reset(),
  };
});

runFileSystemContract(
  "memfs",
  async () => {
    const { service, vol } = make();
    vol.mkdirSync("/work/root", { recursive: true });
    return {
      fs: service,
      root: "/work/root",
      umask: 0,
      cleanup: async () => vol.reset(),
      modeOf: async (path) => Number(vol.statSync(path).mode) & 0o777,
      symlink: async (target, path) => vol.symlinkSync(target, path),
    };
  },
  { symlinks: true, fifos: false, crossProcess: false },
);

describe("memFileSystem", () => {
  it.effect("layer seeds the volume from its initial files", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem;
      expect(new TextDecoder().decode(yield* fs.readFile("/notes/a.md"))).toBe("alpha");
      const entries = yield* fs.walk("/notes");
      expect(entries.map((entry) => entry.relativePath).sort()).toEqual([
        "a.md",
        "sub",
        "sub/b.md",
      ]);
      expect(Option.isNone(yield* fs.info("/notes/none"))).toBe(true);
    }).pipe(Effect.provide(layer({ "/notes/a.md": "alpha", "/notes/sub/b.md": "beta" }))),
  );

  it.effect("a lock file no fiber holds (a crashed holder) is taken over at once", () =>
    Effect.gen(function* () {
      const { service, vol } = make({ "/p/lock": "left-behind-token" });
      const release = yield* service.lock("/p/lock", 0);
      expect(vol.readFileSync("/p/lock", "utf8")).not.toBe("left-behind-token");
      yield* release;
      expect(vol.existsSync("/p/lock")).toBe(false);
    }),
  );

  it.effect("release does not remove a lock file that another holder took", () =>
    Effect.gen(function* () {
      const { service, vol } = make({ "/p/x": "" });
      const release = yield* service.lock("/p/lock", 0);
      // Simulate the file being replaced behind the holder's back.
      vol.writeFileSync("/p/lock", "someone-else");
      yield* release;
      expect(vol.readFileSync("/p/lock", "utf8")).toBe("someone-else");
    }),
  );
});
