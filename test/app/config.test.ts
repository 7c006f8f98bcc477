import { Either } from "effect";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type Host,
  type Invocation,
  type RuntimeConfig,
  parseInvocation,
  secretValuesOf,
} from "../../src/app/config.js";

const host = (env: Record<string, string> = {}, cwd = "/work/here"): Host => ({
  env,
  cwd,
  homeDirectory: "/home/u",
  tmpDirectory: "/tmp",
});

const parse = (argv: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  parseInvocation(argv, host(env));

const ok = (argv: ReadonlyArray<string>, env: Record<string, string> = {}): Invocation => {
  const result = parse(argv, env);
  if (Either.isLeft(result)) throw new Error(`unexpected config error: ${result.left.message}`);
  return result.right;
};

const configOf = (argv: ReadonlyArray<string>, env: Record<string, string> = {}): RuntimeConfig => {
  const invocation = ok(argv, env);
  if (!("config" in invocation)) throw new Error(`no config in ${invocation._tag}`);
  return invocation.config;
};

const errorOf = (argv: ReadonlyArray<string>, env: Record<string, string> = {}): string => {
  const result = parse(argv, env);
  if (Either.isRight(result)) throw new Error(`expected a config error, got ${result.right._tag}`);
  return result.left.message;
};

describe("commands", () => {
  it("version reads nothing else", () => {
    expect(ok(["version"])).toEqual({ _tag: "Version" });
    expect(ok(["--version"])).toEqual({ _tag: "Version" });
    expect(ok(["version"], { QUIRE_STORE: "bogus" })).toEqual({ _tag: "Version" });
    expect(errorOf(["version", "extra"])).toMatch(/no arguments/);
  });

  it("--version (-v) is an option of the parser: alone it is the version, beside anything else a usage error", () => {
    expect(ok(["-v"])).toEqual({ _tag: "Version" });
    const alone = "--version (-v) takes no other arguments; run quire --version alone";
    for (const argv of [
      ["--version", "--json"],
      ["pull", "copy", "-v"],
      ["--version", "--version"],
      ["-v", "status"],
      ["--store", "memory:", "--version"],
    ])
      expect(errorOf(argv), JSON.stringify(argv)).toBe(alone);
    // It was found by matching the parser's "unknown option" text: a misspelling got no
    // suggestion, a value was refused as "other arguments", and any other unknown option
    // on the line (named first) hid it.
    expect(errorOf(["--verison"])).toBe('unknown option "--verison" (did you mean -v/--version?)');
    expect(errorOf(["--version=2"])).toBe("option -v/--version takes no value");
    // A value that looks like it is still a value, and help still wins.
    expect(ok(["commit", "x", "-m", "-v"])).toMatchObject({ _tag: "Commit", message: "-v" });
    expect(ok(["pull", "-v", "-h"])).toEqual({ _tag: "Help", topic: "pull" });
    expect(ok(["--version", "--help"])).toEqual({ _tag: "Help", topic: "quire" });
  });

  it("help wins everywhere", () => {
    expect(ok(["-h"])).toEqual({ _tag: "Help", topic: "quire" });
    expect(ok(["--help"])).toEqual({ _tag: "Help", topic: "quire" });
    expect(ok(["pull", "-h"])).toEqual({ _tag: "Help", topic: "pull" });
    expect(ok(["commit", "x", "--help"])).toEqual({ _tag: "Help", topic: "commit" });
    expect(ok(["help", "serve"])).toEqual({ _tag: "Help", topic: "serve" });
    expect(ok(["serve", "--bogus", "-h"])).toEqual({ _tag: "Help", topic: "serve" });
    expect(ok(["pull", "x", "--store", "bogus", "-h"])).toEqual({ _tag: "Help", topic: "pull" });
  });

  it("refuses missing, unknown and malformed command lines", () => {
    expect(errorOf([])).toMatch(/missing command/);
    expect(errorOf(["frobnicate"])).toMatch(/unknown command "frobnicate"/);
    expect(errorOf(["serve", "--bogus"])).toMatch(/unknown option "--bogus"/);
    expect(errorOf(["serve", "-x"])).toMatch(/unknown option "-x"/);
    expect(errorOf(["serve", "--store"])).toMatch(/--store needs a value/);
    expect(errorOf(["serve", "--path-style=yes"])).toMatch(/takes no value/);
    expect(errorOf(["serve", "notes"])).toMatch(/no PATH/);
    expect(errorOf(["pull"])).toMatch(/needs a PATH/);
    expect(errorOf(["pull", "a", "b"])).toMatch(/exactly one PATH/);
    expect(errorOf(["pull", ""])).toMatch(/PATH must not be empty/);
    expect(errorOf(["pull", "x", "-m", "hi"])).toMatch(/only to quire commit/);
  });

  it("commit needs exactly one message, which may look like a flag", () => {
    expect(errorOf(["commit", "x"])).toMatch(/needs -m/);
    expect(errorOf(["commit", "x", "-m", "a", "-m", "b"])).toMatch(/more than once/);
    expect(ok(["commit", "x", "-m", "-fix the thing"])).toMatchObject({
      message: "-fix the thing",
    });
    expect(ok(["commit", "x", "-mshort"])).toMatchObject({ message: "short" });
    expect(ok(["commit", "x", "--message=a=b"])).toMatchObject({ message: "a=b" });
    expect(ok(["commit", "x", "-m", ""])).toMatchObject({ message: "" });
  });

  it("-- ends options", () => {
    expect(ok(["pull", "--", "-odd"])).toMatchObject({ _tag: "Pull", path: "/work/here/-odd" });
  });
});

describe("PATH", () => {
  it("is resolved against the current directory, ~ against home", () => {
    expect(ok(["pull", "notes"])).toMatchObject({ path: "/work/here/notes" });
    expect(ok(["pull", "../other/./n/"])).toMatchObject({ path: "/work/other/n" });
    expect(ok(["pull", "/abs/dir"])).toMatchObject({ path: "/abs/dir" });
    expect(ok(["pull", "~/n"])).toMatchObject({ path: "/home/u/n" });
  });

  it("flags may come before or after PATH, and before the command", () => {
    const variants = [
      ["pull", "notes", "--store", "file:/x"],
      ["pull", "--store", "file:/x", "notes"],
      ["--store=file:/x", "pull", "notes"],
    ];
    const results = variants.map((argv) => ok(argv));
    expect(results[0]).toMatchObject({ _tag: "Pull", path: "/work/here/notes" });
    expect(results[1]).toEqual(results[0]);
    expect(results[2]).toEqual(results[0]);
  });

  it("any interleaving of flags and PATH parses the same (property)", () => {
    const groups: ReadonlyArray<ReadonlyArray<string>> = [
      ["--store", "s3://bucket-a/p"],
      ["--region=eu-west-1"],
      ["--commit-retries", "3"],
      ["--writable", "docs,notes"],
      ["--read-only=docs/fixed"],
      ["-m", "message"],
      ["--path-style"],
      ["wc"],
    ];
    const reference = ok(["commit", ...groups.flat()]);
    fc.assert(
      fc.property(fc.shuffledSubarray([...groups], { minLength: groups.length }), (shuffled) => {
        expect(ok(["commit", ...shuffled.flat()])).toEqual(reference);
      }),
    );
  });
});

describe("paths that are not UTF-8", () => {
  // Node decodes argv as UTF-8, so a directory named with other bytes arrives as U+FFFD:
  // resolved as given, the path named another directory (which pull then created).
  it("a PATH, a directory option or a file: store holding U+FFFD is refused", () => {
    expect(errorOf(["pull", "c\ufffd"])).toContain("PATH contains U+FFFD");
    expect(errorOf(["serve", "--workspace-root", "/w/\ufffd"])).toContain(
      "--workspace-root contains U+FFFD",
    );
    expect(errorOf(["pull", "n"], { QUIRE_PRIVATE_ROOT: "/p\ufffd" })).toContain(
      "QUIRE_PRIVATE_ROOT contains U+FFFD",
    );
    expect(errorOf(["pull", "n", "--store", "file:/s\ufffd"])).toContain("U+FFFD");
  });

  // A message typed in a Latin-1 terminal ("caf\xe9") arrived as "caf\ufffd" and was
  // published so: the notebook kept a replacement character, not what was written.
  it("a commit message or an --author holding U+FFFD is refused, not published with it", () => {
    expect(errorOf(["commit", "/abs/n", "-m", "caf\ufffd"])).toContain(
      "-m/--message contains U+FFFD",
    );
    expect(errorOf(["commit", "/abs/n", "-m", "m", "--author", "b\ufffd"])).toContain(
      "--author contains U+FFFD",
    );
  });

  it("a relative PATH is refused when the current directory's name is not UTF-8", () => {
    const inside = { ...host({}, "/work/\ufffd"), homeDirectory: "/home/u" };
    const relative = parseInvocation(["pull", "notes"], inside);
    expect(Either.isLeft(relative) && relative.left.message).toContain("current directory");
    expect(Either.isRight(parseInvocation(["pull", "/abs/notes"], inside))).toBe(true);
  });
});

describe("an empty or relative HOME", () => {
  // It would put the default store and private state under the current directory.
  it("is refused for every command that runs, not for help or the version", () => {
    for (const home of ["", "relhome"]) {
      const at = { ...host(), homeDirectory: home };
      const pulled = parseInvocation(["pull", "/abs/notes"], at);
      expect(Either.isLeft(pulled) && pulled.left.message).toContain("HOME is");
      expect(Either.isRight(parseInvocation(["--version"], at))).toBe(true);
      expect(Either.isRight(parseInvocation(["help"], at))).toBe(true);
    }
  });
});

describe("defaults", () => {
  it("serve uses a session workspace, the data-dir file store and the cache-dir private root", () => {
    const invocation = ok(["serve"]);
    expect(invocation).toEqual({
      _tag: "Serve",
      config: {
        store: { kind: "file", root: "/home/u/.local/share/quire/store" },
        workspace: { kind: "session", tmpDirectory: "/tmp" },
        privateRoot: "/home/u/.cache/quire",
        homeDirectory: "/home/u",
        commitRetries: 8,
        checkpointPacks: 1024,
        retainedCheckpoints: 1,
        pathSets: { readOnly: [], writable: [] },
        share: true,
        secretValues: [],
      },
    });
  });

  it("only serve shares its process, unless --no-share or QUIRE_NO_SHARE=1", () => {
    expect(configOf(["serve", "--no-share"]).share).toBe(false);
    expect(configOf(["serve"], { QUIRE_NO_SHARE: "1" }).share).toBe(false);
    expect(configOf(["serve"], { QUIRE_NO_SHARE: "0" }).share).toBe(true);
    expect(configOf(["pull", "n"]).share).toBe(false);
    expect(configOf(["commit", "n", "-m", "x"]).share).toBe(false);
    expect(configOf(["pull", "n"], { QUIRE_NO_SHARE: "1" }).share).toBe(false);
    expect(errorOf(["pull", "n", "--no-share"])).toBe("--no-share applies only to quire serve");
    expect(errorOf(["commit", "n", "-m", "x", "--no-share"])).toBe(
      "--no-share applies only to quire serve",
    );
  });

  it("pull and commit default the workspace root to the current directory", () => {
    expect(configOf(["pull", "n"]).workspace).toEqual({
      kind: "root",
      root: "/work/here",
      explicit: false,
    });
  });

  it("honours absolute XDG directories and ignores relative ones", () => {
    const config = configOf(["serve"], { XDG_DATA_HOME: "/data", XDG_CACHE_HOME: "/cache" });
    expect(config.store).toEqual({ kind: "file", root: "/data/quire/store" });
    expect(config.privateRoot).toBe("/cache/quire");
    const relative = configOf(["serve"], { XDG_DATA_HOME: "data", XDG_CACHE_HOME: "cache" });
    expect(relative.store).toEqual({ kind: "file", root: "/home/u/.local/share/quire/store" });
    expect(relative.privateRoot).toBe("/home/u/.cache/quire");
  });
});

describe("precedence", () => {
  it("flags override the environment, which overrides defaults", () => {
    expect(configOf(["serve"], { QUIRE_COMMIT_RETRIES: "5" }).commitRetries).toBe(5);
    expect(
      configOf(["serve", "--commit-retries", "7"], { QUIRE_COMMIT_RETRIES: "5" }).commitRetries,
    ).toBe(7);
    expect(configOf(["serve"], { QUIRE_STORE: "memory:" }).store).toEqual({ kind: "memory" });
    expect(configOf(["serve", "--store", "file:/s"], { QUIRE_STORE: "memory:" }).store).toEqual({
      kind: "file",
      root: "/s",
    });
    expect(
      configOf(["serve", "--workspace-root", "/w"], { QUIRE_WORKSPACE_ROOT: "/e" }).workspace,
    ).toEqual({ kind: "root", root: "/w", explicit: true });
    expect(configOf(["serve"], { QUIRE_WORKSPACE_ROOT: "/e" }).workspace).toEqual({
      kind: "root",
      root: "/e",
      explicit: true,
    });
    expect(configOf(["serve"], { QUIRE_PRIVATE_ROOT: "/p" }).privateRoot).toBe("/p");
  });

  it("an empty environment variable counts as unset", () => {
    expect(configOf(["serve"], { QUIRE_STORE: "", QUIRE_COMMIT_RETRIES: "" })).toMatchObject({
      store: { kind: "file" },
      commitRetries: 8,
    });
  });

  it("refuses a single-valued option given twice, naming it, in every command", () => {
    expect(errorOf(["serve", "--store", "memory:", "--store", "file:/b"])).toBe(
      "option --store given more than once (it takes one value)",
    );
    // Even with the same value twice, and in either spelling.
    expect(errorOf(["pull", "x", "--store=memory:", "--store", "memory:"])).toMatch(
      /^option --store given more than once/,
    );
    const values: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
      ["store", ["serve"]],
      ["bucket", ["serve"]],
      ["prefix", ["serve"]],
      ["endpoint", ["serve"]],
      ["region", ["serve"]],
      ["workspace-root", ["pull", "x"]],
      ["private-root", ["status", "x"]],
      ["commit-retries", ["commit", "x", "-m", "m"]],
      ["checkpoint-packs", ["serve"]],
      ["retained-checkpoints", ["serve"]],
      ["checkpoint-bytes", ["serve"]],
      ["author", ["commit", "x", "-m", "m"]],
      ["max-count", ["log", "x"]],
      ["file", ["log", "x"]],
      ["from", ["restore", "x", "a.md"]],
    ];
    for (const [name, command] of values)
      expect(errorOf([...command, `--${name}`, "1", `--${name}`, "2"]), name).toMatch(
        new RegExp(`^option (-[a-z]/)?--${name} given more than once`),
      );
    expect(errorOf(["log", "x", "-n", "1", "-n", "2"])).toMatch(
      /^option -n\/--max-count given more than once/,
    );
    expect(errorOf(["commit", "x", "-m", "a", "--message", "b"])).toMatch(
      /^option -m\/--message given more than once/,
    );
    // The path sets are lists: repeating them adds entries.
    expect(configOf(["serve", "--writable", "a", "--writable", "b"]).pathSets.writable).toEqual([
      "a",
      "b",
    ]);
  });

  it("a GEN, positional or --from, is written as quire prints it: no leading zero", () => {
    for (const gen of ["02", "007", "00"]) {
      expect(errorOf(["show", "x", gen])).toBe(
        "GEN must be a whole number from 1 to 999999999, written without leading zeros",
      );
      expect(errorOf(["revert", "x", gen])).toMatch(/^GEN must be .* without leading zeros$/);
      expect(errorOf(["restore", "x", "a.md", "--from", gen])).toMatch(
        /^--from must be .* without leading zeros$/,
      );
    }
    expect(ok(["show", "x", "20"])).toMatchObject({ generation: 20 });
  });
});

describe("store selection", () => {
  it("parses every store kind", () => {
    expect(configOf(["serve", "--store", "memory:"]).store).toEqual({ kind: "memory" });
    expect(configOf(["serve", "--store", "file:rel/dir"]).store).toEqual({
      kind: "file",
      root: "/work/here/rel/dir",
    });
    expect(configOf(["serve", "--store", "file:~/s"]).store).toEqual({
      kind: "file",
      root: "/home/u/s",
    });
    expect(configOf(["serve", "--store", "file:///abs/s%20t"]).store).toEqual({
      kind: "file",
      root: "/abs/s t",
    });
    expect(configOf(["serve", "--store", "s3://my-bucket"]).store).toEqual({
      kind: "s3",
      bucket: "my-bucket",
      prefix: "",
      region: "us-east-1",
      forcePathStyle: false,
    });
    expect(configOf(["serve", "--store", "minio://my.bucket/team/a/"]).store).toEqual({
      kind: "minio",
      bucket: "my.bucket",
      prefix: "team/a",
      region: "us-east-1",
      forcePathStyle: false,
    });
  });

  it("refuses malformed stores", () => {
    expect(errorOf(["serve", "--store", "file:"])).toMatch(/needs a directory/);
    expect(errorOf(["serve", "--store", "file://host/x"])).toMatch(/must not name a host/);
    expect(errorOf(["serve", "--store", "ftp://x"])).toMatch(/--store must be/);
    expect(errorOf(["serve", "--store", "s3://"])).toMatch(/invalid bucket name/);
    expect(errorOf(["serve", "--store", "s3://Upper"])).toMatch(/invalid bucket name/);
    expect(errorOf(["serve", "--store", "s3://ok-bucket/a//b"])).toMatch(/invalid store prefix/);
    expect(errorOf(["serve", "--store", "s3://ok-bucket/a/../b"])).toMatch(/invalid store prefix/);
    expect(errorOf(["serve"], { QUIRE_STORE: "nope" })).toMatch(/--store must be/);
  });

  it("--bucket and --prefix are the alternative spelling of an S3 store", () => {
    expect(configOf(["serve", "--bucket", "bkt", "--prefix", "/p/q/"]).store).toMatchObject({
      kind: "s3",
      bucket: "bkt",
      prefix: "p/q",
    });
    expect(configOf(["serve"], { QUIRE_BUCKET: "bkt", QUIRE_PREFIX: "p" }).store).toMatchObject({
      kind: "s3",
      bucket: "bkt",
      prefix: "p",
    });
    expect(configOf(["serve", "--store", "minio://bkt", "--bucket", "bkt"]).store).toMatchObject({
      kind: "minio",
      bucket: "bkt",
    });
    expect(errorOf(["serve", "--store", "s3://one", "--bucket", "two"])).toMatch(/conflicts/);
    expect(errorOf(["serve", "--store", "memory:", "--bucket", "two"])).toMatch(/conflicts/);
    expect(errorOf(["serve", "--store", "s3://bkt/a", "--prefix", "b"])).toMatch(/conflicts/);
    expect(configOf(["serve", "--store", "s3://bkt/a", "--prefix", "a/"]).store).toMatchObject({
      prefix: "a",
    });
  });

  it("a flag-level store overrides an environment store wholesale, but takes an unset prefix from it", () => {
    expect(
      configOf(["serve", "--store", "memory:"], { QUIRE_BUCKET: "bkt", QUIRE_PREFIX: "p" }).store,
    ).toEqual({ kind: "memory" });
    expect(
      configOf(["serve", "--store", "s3://flag"], { QUIRE_STORE: "s3://env/x" }).store,
    ).toMatchObject({ bucket: "flag", prefix: "" });
    expect(configOf(["serve", "--store", "s3://flag"], { QUIRE_PREFIX: "p" }).store).toMatchObject({
      bucket: "flag",
      prefix: "p",
    });
    expect(configOf(["serve", "--prefix", "f"], { QUIRE_STORE: "s3://env/e" }).store).toMatchObject(
      {
        bucket: "env",
        prefix: "f",
      },
    );
  });

  it("S3-only flags are refused for file and memory stores; their variables are ignored", () => {
    for (const flag of [
      ["--prefix", "p"],
      ["--endpoint", "http://h"],
      ["--region", "r"],
      ["--path-style"],
    ]) {
      expect(errorOf(["serve", "--store", "file:/s", ...flag])).toMatch(/only to s3/);
    }
    expect(
      configOf(["serve"], { AWS_ENDPOINT_URL_S3: "http://h", AWS_REGION: "x", QUIRE_PREFIX: "p" })
        .store,
    ).toEqual({ kind: "file", root: "/home/u/.local/share/quire/store" });
  });

  it("normalises the endpoint and forces path style with it", () => {
    const store = (endpoint: string) =>
      configOf(["serve", "--store", "s3://bkt", "--endpoint", endpoint]).store;
    expect(store("HTTP://Example.COM:80/")).toMatchObject({
      endpoint: "http://example.com",
      forcePathStyle: true,
    });
    expect(store("https://h.example:9000/base/")).toMatchObject({
      endpoint: "https://h.example:9000/base",
    });
    expect(
      configOf(["serve", "--bucket", "bkt"], { AWS_ENDPOINT_URL_S3: "http://127.0.0.1:4569" })
        .store,
    ).toMatchObject({
      endpoint: "http://127.0.0.1:4569",
      forcePathStyle: true,
    });
    expect(configOf(["serve", "--bucket", "bkt", "--path-style"]).store).toMatchObject({
      forcePathStyle: true,
    });
    expect(configOf(["serve", "--bucket", "bkt"]).store).not.toHaveProperty("endpoint");
  });

  it("refuses endpoints with user-info, query or fragment without echoing them", () => {
    const secret = "hunter2hunter2";
    const message = errorOf(["serve", "--bucket", "bkt", "--endpoint", `https://key:${secret}@h`]);
    expect(message).toMatch(/user information/);
    expect(message).not.toContain(secret);
    expect(errorOf(["serve", "--bucket", "bkt", "--endpoint", "https://h/?a=1"])).toMatch(/query/);
    expect(errorOf(["serve", "--bucket", "bkt", "--endpoint", "https://h/#f"])).toMatch(/fragment/);
    expect(errorOf(["serve", "--bucket", "bkt", "--endpoint", "ftp://h"])).toMatch(/http or https/);
    expect(errorOf(["serve", "--bucket", "bkt", "--endpoint", "/relative"])).toMatch(/absolute/);
  });

  it("refuses an endpoint with a path for minio://, whose client would drop the path", () => {
    expect(
      errorOf(["serve", "--store", "minio://bkt", "--endpoint", "http://gw:9000/tenant-a"]),
    ).toMatch(/has a path, which the MinIO client cannot use/);
    expect(
      errorOf(["serve", "--store", "minio://bkt"], { AWS_ENDPOINT_URL_S3: "http://gw/x/" }),
    ).toMatch(/AWS_ENDPOINT_URL_S3 has a path/);
    expect(
      configOf(["serve", "--store", "minio://bkt", "--endpoint", "http://gw:9000/"]).store,
    ).toMatchObject({ endpoint: "http://gw:9000" });
  });

  it("takes the region from the flag, AWS_REGION, or us-east-1", () => {
    expect(configOf(["serve", "--bucket", "bkt"]).store).toMatchObject({ region: "us-east-1" });
    expect(configOf(["serve", "--bucket", "bkt"], { AWS_REGION: "eu-west-3" }).store).toMatchObject(
      {
        region: "eu-west-3",
      },
    );
    expect(
      configOf(["serve", "--bucket", "bkt", "--region", "ap-south-1"], { AWS_REGION: "eu-west-3" })
        .store,
    ).toMatchObject({ region: "ap-south-1" });
    expect(errorOf(["serve", "--bucket", "bkt", "--region", "a b"])).toMatch(/not a region/);
  });
});

describe("numbers", () => {
  it("enforces each range", () => {
    expect(configOf(["serve", "--commit-retries", "0"]).commitRetries).toBe(0);
    expect(configOf(["serve", "--commit-retries", "100"]).commitRetries).toBe(100);
    expect(errorOf(["serve", "--commit-retries", "101"])).toMatch(
      /--commit-retries must be a whole number from 0 to 100, written without leading zeros/,
    );
    expect(errorOf(["serve", "--commit-retries", "-1"])).toMatch(/from 0 to 100/);
    expect(errorOf(["serve", "--commit-retries", "1.5"])).toMatch(/from 0 to 100/);
    expect(errorOf(["serve"], { QUIRE_COMMIT_RETRIES: "x" })).toMatch(
      /QUIRE_COMMIT_RETRIES must be/,
    );
    expect(configOf(["serve", "--retained-checkpoints", "64"]).retainedCheckpoints).toBe(64);
    expect(errorOf(["serve", "--retained-checkpoints", "65"])).toMatch(/from 0 to 64/);
    expect(configOf(["serve", "--checkpoint-packs", "1"]).checkpointPacks).toBe(1);
    expect(errorOf(["serve", "--checkpoint-packs", "0"])).toMatch(/--checkpoint-packs/);
  });
});

describe("directories", () => {
  it("refuses a private root at or below the workspace root", () => {
    expect(errorOf(["serve", "--workspace-root", "/w", "--private-root", "/w/p"])).not.toContain(
      "/w/p",
    );
    expect(errorOf(["serve", "--workspace-root", "/w", "--private-root", "/w/p"])).toMatch(
      /private root \(--private-root\) is at or below the workspace root \/w/,
    );
    expect(errorOf(["serve", "--workspace-root", "/w", "--private-root", "/w"])).toMatch(
      /at or below/,
    );
    expect(errorOf(["pull", "n", "--workspace-root", ".", "--private-root", "state"])).toMatch(
      /at or below/,
    );
    // The other way round too (`quire mcp install` registered such a server, which then
    // refused to start).
    expect(errorOf(["serve", "--workspace-root", "/p/w", "--private-root", "/p"])).toMatch(
      /the workspace root \/p\/w is inside the private root/,
    );
    // The CLI's default workspace root is the current directory: a private root below it
    // (e.g. ~/.cache/quire when run from ~) is allowed; the use cases refuse a working
    // copy that overlaps it instead.
    expect(configOf(["pull", "n", "--private-root", "state"]).privateRoot).toBe("/work/here/state");
    expect(configOf(["serve", "--workspace-root", "/w", "--private-root", "/w2"]).privateRoot).toBe(
      "/w2",
    );
    // The session directory is fresh, so no private root can be inside it.
    expect(configOf(["serve", "--private-root", "/tmp/p"]).privateRoot).toBe("/tmp/p");
  });

  it("resolves relative directories against the current directory", () => {
    const config = configOf(["serve", "--workspace-root", "ws", "--private-root", "../priv"]);
    expect(config.workspace).toEqual({ kind: "root", root: "/work/here/ws", explicit: true });
    expect(config.privateRoot).toBe("/work/priv");
    expect(errorOf(["serve", "--workspace-root", ""])).toMatch(/must not be empty/);
  });
});

describe("path sets", () => {
  it("takes repeatable, comma-separated flags, normalised and sorted", () => {
    const config = configOf([
      "serve",
      "--writable",
      "notes/,./b",
      "--writable=a",
      "--read-only",
      "notes/fixed",
    ]);
    expect(config.pathSets).toEqual({ writable: ["a", "b", "notes"], readOnly: ["notes/fixed"] });
  });

  it("takes the environment unless a flag is given", () => {
    expect(configOf(["serve"], { QUIRE_WRITABLE: "x,y", QUIRE_READ_ONLY: "z" }).pathSets).toEqual({
      writable: ["x", "y"],
      readOnly: ["z"],
    });
    expect(configOf(["serve", "--writable", "w"], { QUIRE_WRITABLE: "x,y" }).pathSets).toEqual({
      writable: ["w"],
      readOnly: [],
    });
  });

  it("refuses invalid entries and entries in both sets", () => {
    expect(errorOf(["serve", "--writable", "../up"])).toMatch(/invalid path set/);
    expect(errorOf(["serve", "--writable", "a", "--read-only", "a/"])).toMatch(
      /both writable and read-only/,
    );
  });
});

describe("path-set lists that would silently confine less than asked", () => {
  it('refuses an entry with white space after a comma: `docs, faq.md` would protect " faq.md", not faq.md', () => {
    expect(errorOf(["serve", "--read-only", "docs, faq.md"])).toMatch(
      /invalid path set: .*" faq\.md".*white space/,
    );
    expect(errorOf(["serve"], { QUIRE_WRITABLE: "notes,\tdrafts" })).toMatch(/white space/);
  });

  it("refuses a --writable or --read-only flag that names no entry, rather than configuring no set", () => {
    for (const flag of ["--writable", "--read-only"]) {
      for (const value of ["", ",", " , "]) {
        expect(errorOf(["serve", flag, value]), `${flag} ${JSON.stringify(value)}`).toMatch(
          /names no entry/,
        );
      }
    }
  });

  it("an empty environment list still means no set", () => {
    expect(configOf(["serve"], { QUIRE_WRITABLE: "", QUIRE_READ_ONLY: "" }).pathSets).toEqual({
      writable: [],
      readOnly: [],
    });
  });
});

describe("secrets", () => {
  it("collects credential-like environment values for redaction", () => {
    expect(
      secretValuesOf({
        AWS_SECRET_ACCESS_KEY: "wJalrXUtnFEMI/K7MDENG",
        AWS_SESSION_TOKEN: "token-token-token",
        AWS_ACCESS_KEY_ID: "AKIAABCDEFGHIJKLMNOP",
        HOME: "/home/someone-long",
        SHORT_TOKEN: "abc",
      }),
    ).toEqual(["wJalrXUtnFEMI/K7MDENG", "token-token-token", "AKIAABCDEFGHIJKLMNOP"]);
  });
});
