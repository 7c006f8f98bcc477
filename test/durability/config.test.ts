import { Effect, Either, Option } from "effect";
import { describe, expect, it } from "vitest";
import * as faulty from "../../src/adapters/faultyObjectStore.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import { type RuntimeConfig, parseInvocation } from "../../src/app/config.js";
import { notebookOptions } from "../../src/app/layers.js";

const configOf = (argv: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const parsed = parseInvocation(argv, {
    env,
    cwd: "/w",
    homeDirectory: "/home/u",
    tmpDirectory: "/tmp",
  });
  if (Either.isLeft(parsed)) return parsed.left.message;
  const invocation = parsed.right;
  if (!("config" in invocation)) throw new Error("no config");
  return invocation.config;
};

const config = (argv: ReadonlyArray<string>, env: Record<string, string> = {}): RuntimeConfig => {
  const result = configOf(argv, env);
  if (typeof result === "string") throw new Error(result);
  return result;
};

const workspace = { workspaceRoot: "/w", notebookDirectory: "/w", privateRoot: "/p" };

describe("durability settings", () => {
  it("--allow-mass-delete and QUIRE_ALLOW_MASS_DELETE reach the use cases; default refuses", () => {
    expect(notebookOptions(config(["pull", "x"]), workspace).allowMassDelete).toBeUndefined();
    const flag = config(["commit", "x", "-m", "m", "--allow-mass-delete"]);
    expect(notebookOptions(flag, workspace).allowMassDelete).toBe(true);
    const env = config(["serve"], { QUIRE_ALLOW_MASS_DELETE: "1" });
    expect(notebookOptions(env, workspace).allowMassDelete).toBe(true);
    expect(config(["serve"], { QUIRE_ALLOW_MASS_DELETE: "0" }).allowMassDelete).toBeUndefined();
    expect(configOf(["serve"], { QUIRE_ALLOW_MASS_DELETE: "yes" })).toMatch(
      /QUIRE_ALLOW_MASS_DELETE must be 1, true, 0 or false/,
    );
    expect(configOf(["serve", "--allow-mass-delete=1"])).toMatch(/allow-mass-delete/);
  });

  it("--checkpoint-bytes overrides QUIRE_CHECKPOINT_BYTES; absent leaves the default to the use cases", () => {
    expect(config(["serve"]).checkpointBytes).toBeUndefined();
    expect(config(["serve"], { QUIRE_CHECKPOINT_BYTES: "2048" }).checkpointBytes).toBe(2048);
    const both = config(["serve", "--checkpoint-bytes", "4096"], {
      QUIRE_CHECKPOINT_BYTES: "2048",
    });
    expect(notebookOptions(both, workspace).checkpointBytes).toBe(4096);
    expect(configOf(["serve", "--checkpoint-bytes", "0"])).toMatch(/--checkpoint-bytes must be/);
  });

  it("QUIRE_FAULT_INJECTION is parsed strictly and only from the environment", () => {
    expect(config(["serve"]).faultInjection).toBeUndefined();
    const parsed = config(["serve"], {
      QUIRE_FAULT_INJECTION: "seed=7; put:current:fail-after:0.5 ;get:*:delay-3:1;put:x:timeout:1",
    }).faultInjection;
    expect(parsed?.seed).toBe(7);
    expect(parsed?.rules?.map((r) => r.fault)).toEqual([
      { _tag: "FailAfter" },
      { _tag: "Delay", ms: 3 },
      { _tag: "FailBefore", reason: "Ambiguous" },
    ]);
    expect(configOf(["serve"], { QUIRE_FAULT_INJECTION: "put:current:explode:1" })).toMatch(
      /QUIRE_FAULT_INJECTION: unknown fault/,
    );
    expect(configOf(["serve"], { QUIRE_FAULT_INJECTION: "put:x:fail-before:2" })).toMatch(
      /bad probability/,
    );
    expect(configOf(["serve", "--fault-injection", "x"])).toMatch(/unknown option/);
  });

  it("a parsed spec drives the fault store: lost responses take effect, failures before do not", async () => {
    const options = faulty.parseFaultSpec("put:a:fail-after:1;put:b:fail-before:1");
    if (Either.isLeft(options)) throw new Error(options.left);
    const inner = memoryStore.make();
    const store = faulty.make(inner, options.right).store;
    const bytes = new Uint8Array([1]);
    const a = await Effect.runPromise(
      Effect.either(store.put("a", bytes, { _tag: "IfNoneMatch" })),
    );
    const b = await Effect.runPromise(
      Effect.either(store.put("b", bytes, { _tag: "IfNoneMatch" })),
    );
    expect(Either.isLeft(a) && a.left.reason).toBe("Ambiguous");
    expect(Either.isLeft(b) && b.left.reason).toBe("Unavailable");
    expect(Option.isSome(await Effect.runPromise(inner.get("a")))).toBe(true);
    expect(Option.isSome(await Effect.runPromise(inner.get("b")))).toBe(false);
  });
  it("the first rule that applies is the only one: a leading catch-all delay hides a later fault, a trailing one does not (docs/durability.md)", async () => {
    const putB = async (spec: string) => {
      const options = faulty.parseFaultSpec(spec);
      if (Either.isLeft(options)) throw new Error(options.left);
      const made = faulty.make(memoryStore.make(), options.right);
      const put = await Effect.runPromise(
        Effect.either(made.store.put("b", new Uint8Array([1]), { _tag: "IfNoneMatch" })),
      );
      return Either.isLeft(put) ? put.left.reason : "ok";
    };
    expect(await putB("*:*:delay-1:1;put:b:fail-before:1")).toBe("ok");
    expect(await putB("put:b:fail-before:1;*:*:delay-1:1")).toBe("Unavailable");
  });
});
