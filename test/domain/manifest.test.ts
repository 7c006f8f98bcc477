import { Either, ParseResult } from "effect";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  catchUpPlan,
  decodeManifest,
  encodeManifest,
  isManifestShape,
  ManifestV1,
  packKey,
  type Manifest,
} from "../../src/domain/manifest.js";

const id = (n: number) => `0190a5b4-0000-7000-8000-${n.toString(16).padStart(12, "0")}`;
const sha = (n: number) => n.toString(16).padStart(64, "0");
const descriptor = (kind: "checkpoint" | "increment", generation: number, n: number) => ({
  key: packKey(kind, generation, id(n)),
  generation,
  size: 10 * n,
  sha256: sha(n),
  publicationId: id(n),
});

const valid: Manifest = {
  version: 1,
  generation: 3,
  head: id(3),
  checkpoint: descriptor("checkpoint", 1, 1),
  increments: [descriptor("increment", 2, 2), descriptor("increment", 3, 3)],
  retained: [],
};

const problem = (text: string) => {
  const result = decodeManifest(text);
  return Either.isLeft(result) ? result.left : undefined;
};

describe("manifest v1 codec", () => {
  it("round-trips canonical JSON", () => {
    const text = encodeManifest(valid);
    expect(decodeManifest(text)).toEqual(Either.right(valid));
    expect(encodeManifest(Either.getOrThrow(decodeManifest(text)))).toBe(text);
  });

  it("refuses unknown fields, missing fields, null and duplicates", () => {
    const raw = JSON.parse(encodeManifest(valid));
    expect(problem(JSON.stringify({ ...raw, extra: 1 }))?.reason).toBe("MANIFEST_INVALID");
    const { head: _head, ...missing } = raw;
    expect(problem(JSON.stringify(missing))?.reason).toBe("MANIFEST_INVALID");
    expect(problem(JSON.stringify({ ...raw, retained: null }))?.reason).toBe("MANIFEST_INVALID");
    expect(
      problem(JSON.stringify({ ...raw, checkpoint: { ...raw.checkpoint, size: null } }))?.reason,
    ).toBe("MANIFEST_INVALID");
    const duplicated = encodeManifest(valid).replace(
      '"generation":3,',
      '"generation":3,"generation":3,',
    );
    expect(problem(duplicated)?.problem).toMatch(/duplicate key/);
    expect(problem("{not json")?.reason).toBe("MANIFEST_INVALID");
    // Problems name the field, never dump the schema or the value.
    expect(problem(JSON.stringify({ ...raw, generation: "7" }))?.problem).toBe(
      "generation has the wrong type",
    );
    expect(problem(JSON.stringify({ ...raw, extra: 1 }))?.problem).toBe(
      "extra is not a known field",
    );
  });

  it("refuses an unknown version as UNSUPPORTED_VERSION", () => {
    const raw = JSON.parse(encodeManifest(valid));
    expect(problem(JSON.stringify({ ...raw, version: 2 }))?.reason).toBe("UNSUPPORTED_VERSION");
  });

  it("refuses inconsistent chains", () => {
    const bad = (m: Manifest) => problem(encodeManifest(m))?.reason;
    expect(bad({ ...valid, head: id(9) })).toBe("MANIFEST_INVALID");
    expect(bad({ ...valid, generation: 2 })).toBe("MANIFEST_INVALID");
    expect(
      bad({ ...valid, increments: [descriptor("increment", 3, 3), descriptor("increment", 2, 2)] }),
    ).toBe("MANIFEST_INVALID");
    expect(bad({ ...valid, checkpoint: descriptor("increment", 1, 1) })).toBe("MANIFEST_INVALID");
    expect(
      bad({ ...valid, retained: [{ checkpoint: descriptor("checkpoint", 1, 1), increments: [] }] }),
    ).toBe("MANIFEST_INVALID");
  });
});

describe("the manifest codec's fast paths", () => {
  const bySchema = ParseResult.decodeUnknownEither(ManifestV1, { onExcessProperty: "error" });
  // Values each field must refuse: wrong types, out-of-range numbers, near-miss strings.
  const junk = fc.constantFrom<unknown>(
    null,
    undefined,
    -1,
    0,
    1.5,
    2 ** 53,
    Number.NaN,
    "1",
    "",
    [],
    {},
    true,
    id(1).toUpperCase(),
    id(1).replace("-7", "-4"),
    sha(1).slice(1),
    `${sha(1)}\n`,
    `packs/increments/0-${id(1)}.pack`,
    `packs/other/1-${id(1)}.pack`,
  );
  const field = <A>(good: fc.Arbitrary<A>): fc.Arbitrary<unknown> =>
    fc.oneof({ weight: 40, arbitrary: good }, { weight: 1, arbitrary: junk });
  // An object of these fields, sometimes with one missing, one extra or `__proto__` set.
  const object = (fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<unknown> =>
    fc
      .tuple(
        fc.record(fields),
        fc.oneof(
          { weight: 40, arbitrary: fc.constant("keep") },
          { weight: 1, arbitrary: fc.constantFrom("drop", "extra", "proto") },
        ),
        fc.constantFrom(...Object.keys(fields)),
      )
      .map(([record, change, name]) => {
        const copy: Record<string, unknown> = { ...record };
        if (change === "drop") delete copy[name];
        if (change === "extra") copy["extra"] = 1;
        const text = JSON.stringify(copy);
        // `__proto__` as an own key, as JSON.parse makes it from stored text.
        return change === "proto" ? JSON.parse(`${text.slice(0, -1)},"__proto__":{}}`) : copy;
      });
  const n = fc.integer({ min: 1, max: 50 });
  const descriptorLike = object({
    key: field(
      fc
        .tuple(fc.constantFrom("checkpoint" as const, "increment" as const), n, n)
        .map(([kind, generation, k]) => packKey(kind, generation, id(k))),
    ),
    generation: field(n),
    size: field(fc.integer({ min: 0, max: 1_000 })),
    sha256: field(n.map(sha)),
    publicationId: field(n.map(id)),
  });
  const descriptors = field(fc.array(descriptorLike, { maxLength: 4 }));
  const manifestLike = object({
    version: field(fc.constant(1)),
    generation: field(n),
    head: field(n.map(id)),
    checkpoint: field(descriptorLike),
    increments: descriptors,
    retained: field(
      fc.array(object({ checkpoint: field(descriptorLike), increments: descriptors }), {
        maxLength: 2,
      }),
    ),
  });

  it("accepts exactly what the Schema decodes, and yields the same value", () => {
    let accepted = 0;
    fc.assert(
      fc.property(manifestLike, (raw) => {
        const decoded = bySchema(raw);
        expect(isManifestShape(raw)).toBe(Either.isRight(decoded));
        if (Either.isRight(decoded)) {
          accepted++;
          expect(raw).toEqual(decoded.right);
        }
      }),
      { numRuns: 3_000 },
    );
    // The generator must reach both answers often, or the agreement says little.
    expect(accepted).toBeGreaterThan(100);
    expect(accepted).toBeLessThan(2_900);
  });

  it("encodes exactly as JSON.stringify in the schema's key order, cached or not", () => {
    const pick = (d: Manifest["checkpoint"]) => ({
      key: d.key,
      generation: d.generation,
      size: d.size,
      sha256: d.sha256,
      publicationId: d.publicationId,
    });
    const reference = (m: Manifest) =>
      JSON.stringify({
        version: 1,
        generation: m.generation,
        head: m.head,
        checkpoint: pick(m.checkpoint),
        increments: m.increments.map(pick),
        retained: m.retained.map((c) => ({
          checkpoint: pick(c.checkpoint),
          increments: c.increments.map(pick),
        })),
      });
    fc.assert(
      fc.property(manifestLike.filter(isManifestShape), (m) => {
        const text = reference(m);
        expect(encodeManifest(m)).toBe(text);
        // Again, from the cached texts, and with the same descriptors in a new manifest.
        expect(encodeManifest(m)).toBe(text);
        const next: Manifest = {
          ...m,
          generation: m.generation + 1,
          increments: [...m.increments],
        };
        expect(encodeManifest(next)).toBe(reference(next));
      }),
      { numRuns: 500 },
    );
  });
});

describe("catchUpPlan", () => {
  const inc = (generation: number) => descriptor("increment", generation, generation);
  const cp = (generation: number, n: number) => descriptor("checkpoint", generation, n);
  // Chain A (checkpoint 1, increments 2–4), a checkpoint at 4 swapped in at 5; chain B
  // (checkpoint 4, increments 6–7), a checkpoint at 7 swapped in at 8; active chain
  // (checkpoint 7, increments 9–10).
  const history = (checkpointSize: number, retained: Manifest["retained"]): Manifest => ({
    version: 1,
    generation: 10,
    head: id(10),
    checkpoint: { ...cp(7, 107), size: checkpointSize },
    increments: [inc(9), inc(10)],
    retained,
  });
  const chainB = { checkpoint: cp(4, 104), increments: [inc(6), inc(7)] };
  const chainA = { checkpoint: cp(1, 101), increments: [inc(2), inc(3), inc(4)] };
  const plan = (m: Manifest, generation: number) => {
    const { incremental, packs } = catchUpPlan(m, generation);
    return { incremental, generations: packs.map((d) => d.generation) };
  };

  it("catches up from the active chain, then from retained chains, then from the checkpoint", () => {
    const m = history(10_000, [chainB, chainA]);
    expect(plan(m, 10)).toEqual({ incremental: true, generations: [] });
    expect(plan(m, 9)).toEqual({ incremental: true, generations: [10] });
    expect(plan(m, 7)).toEqual({ incremental: true, generations: [9, 10] });
    expect(plan(m, 5)).toEqual({ incremental: true, generations: [6, 7, 9, 10] });
    expect(plan(m, 4)).toEqual({ incremental: true, generations: [6, 7, 9, 10] });
    expect(plan(m, 3)).toEqual({ incremental: true, generations: [4, 6, 7, 9, 10] });
    expect(plan(m, 1)).toEqual({ incremental: true, generations: [2, 3, 4, 6, 7, 9, 10] });
    expect(plan(m, 0)).toEqual({ incremental: false, generations: [7, 9, 10] });
  });

  it("takes the checkpoint when no retained chain reaches back far enough", () => {
    expect(plan(history(10_000, []), 5)).toEqual({ incremental: false, generations: [7, 9, 10] });
    expect(plan(history(10_000, [chainB]), 3)).toEqual({
      incremental: false,
      generations: [7, 9, 10],
    });
    expect(plan(history(10_000, [chainB]), 4)).toEqual({
      incremental: true,
      generations: [6, 7, 9, 10],
    });
  });

  it("takes the checkpoint when the retained increments are more bytes than it", () => {
    // Increments 6 and 7 are 60 + 70 bytes.
    expect(plan(history(130, [chainB]), 5).incremental).toBe(true);
    expect(plan(history(129, [chainB]), 5)).toEqual({
      incremental: false,
      generations: [7, 9, 10],
    });
  });
});
