import { describe, expect, it } from "vitest";
import type { Manifest, PackDescriptor } from "../../src/domain/manifest.js";
import { publicationsAhead } from "../../src/app/usecases/history/status.js";

const d = (kind: "checkpoints" | "increments", generation: number): PackDescriptor => ({
  key: `packs/${kind}/${generation}-01a23580-0000-7000-8000-000000000000.pack`,
  generation,
  size: 1,
  sha256: "0".repeat(64),
  publicationId: "01a23580-0000-7000-8000-000000000000",
});

const manifest = (
  generation: number,
  checkpoint: number,
  increments: ReadonlyArray<number>,
  retained: ReadonlyArray<readonly [number, ReadonlyArray<number>]> = [],
): Manifest => ({
  version: 1,
  generation,
  head: "01a23580-0000-7000-8000-000000000000",
  checkpoint: d("checkpoints", checkpoint),
  increments: increments.map((g) => d("increments", g)),
  retained: retained.map(([c, incs]) => ({
    checkpoint: d("checkpoints", c),
    increments: incs.map((g) => d("increments", g)),
  })),
});

describe("how far current is ahead of a copy", () => {
  it("counts publications, not generations, across the chains current names", () => {
    // First publication (checkpoint 1), then increments; a compaction at 5 (generation 6).
    const m = manifest(9, 5, [7, 8, 9], [[1, [2, 3, 4, 5]]]);
    expect(publicationsAhead(m, 0)).toEqual({ ahead: 8, atLeast: false });
    expect(publicationsAhead(m, 3)).toEqual({ ahead: 5, atLeast: false });
    expect(publicationsAhead(m, 6)).toEqual({ ahead: 3, atLeast: false });
    expect(publicationsAhead(m, 9)).toEqual({ ahead: 0, atLeast: false });
  });

  it("says at least when the copy is older than every chain still named", () => {
    const m = manifest(20, 15, [17, 18], [[10, [11, 12, 13, 14, 15]]]);
    expect(publicationsAhead(m, 4)).toEqual({ ahead: 7, atLeast: true });
    expect(publicationsAhead(m, 10)).toEqual({ ahead: 7, atLeast: false });
  });
});
