import { describe, expect, it } from "vitest";
import { makeRecentPacks } from "../../src/app/usecases/commit/recentPacks.js";

const bytes = (n: number) => new Uint8Array(n);

describe("recent packs", () => {
  it("keeps packs per store, within the byte bound, forgetting the least recently used", () => {
    const recent = makeRecentPacks(100, 10);
    recent.remember("s1", "a", bytes(20));
    recent.remember("s1", "b", bytes(20));
    recent.remember("s1", "c", bytes(20));
    expect(recent.get("s2", "a")).toBeUndefined(); // another store's pack of that name
    expect(recent.get("s1", "a")?.bytes.length).toBe(20); // `a` is now the most recently used
    recent.remember("s1", "d", bytes(25)); // 85 bytes
    recent.remember("s1", "e", bytes(25)); // 110 > 100: `b`, the least recently used, goes
    expect(recent.get("s1", "b")).toBeUndefined();
    for (const kept of ["a", "c", "d", "e"]) expect(recent.get("s1", kept)).toBeDefined();
    recent.remember("s1", "big", bytes(26)); // more than a quarter of the bound: not kept
    expect(recent.get("s1", "big")).toBeUndefined();
  });

  it("keeps at most its count of packs however small they are, forgetting the least recently used", () => {
    const recent = makeRecentPacks(1_000_000, 3);
    for (const sha of ["a", "b", "c"]) recent.remember("s1", sha, bytes(1));
    expect(recent.get("s1", "a")).toBeDefined(); // `b` is now the least recently used
    recent.remember("s1", "d", bytes(1));
    expect(recent.get("s1", "b")).toBeUndefined();
    for (const kept of ["a", "c", "d"]) expect(recent.get("s1", kept)).toBeDefined();
    for (let i = 0; i < 1000; i++) recent.remember("s1", `x${i}`, bytes(1));
    const left = ["a", "c", "d", ...Array.from({ length: 1000 }, (_, i) => `x${i}`)].filter(
      (sha) => recent.get("s1", sha) !== undefined,
    );
    expect(left).toEqual(["x997", "x998", "x999"]);
  });

  it("remembers where a pack is cached durably, and keeps it when the bytes are remembered again", () => {
    const recent = makeRecentPacks(100, 10);
    recent.cachedAt("s1", "a", "/private/c1/packs/a.pack"); // not remembered: nothing to record
    expect(recent.get("s1", "a")).toBeUndefined();
    recent.remember("s1", "a", bytes(10));
    expect(recent.get("s1", "a")?.file).toBeUndefined();
    recent.cachedAt("s1", "a", "/private/c1/packs/a.pack");
    recent.remember("s1", "a", bytes(10));
    expect(recent.get("s1", "a")?.file).toBe("/private/c1/packs/a.pack");
    expect(recent.get("s2", "a")).toBeUndefined();
  });
});
