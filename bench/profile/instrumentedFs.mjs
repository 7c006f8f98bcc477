// Profiling helper: wraps a FileSystemService so every method call is counted and
// timed (count, summed latency, first and last call time relative to `reset`).
import { Effect } from "effect";

const kindOf = (file, options) => {
  const base = file.split("/").pop() ?? "";
  // Hex ids and numbers vary per file; what is left names the kind of file.
  const shape = base.replace(/[0-9a-f]{12,}/g, "<hex>").replace(/\d+/g, "N");
  const durable =
    options && typeof options === "object" && options.durable === true ? " durable" : "";
  return shape + durable;
};

export const instrumentFs = (inner) => {
  let t0 = performance.now();
  let ops = {};
  const wrapped = {};
  for (const [name, value] of Object.entries(inner)) {
    if (typeof value !== "function") {
      wrapped[name] = value;
      continue;
    }
    wrapped[name] = (...args) => {
      const result = value(...args);
      if (!Effect.isEffect(result)) return result;
      return Effect.suspend(() => {
        const start = performance.now();
        // FS_PATHS=1 splits counts by the kind of path (the file name's shape).
        const key =
          process.env.FS_PATHS === "1" && typeof args[0] === "string"
            ? `${name} ${kindOf(args[0], args[2])}`
            : name;
        const op = (ops[key] ??= { count: 0, ms: 0, first: start - t0, last: 0 });
        op.count++;
        return result.pipe(
          Effect.ensuring(
            Effect.sync(() => {
              const end = performance.now();
              op.ms += end - start;
              op.last = end - t0;
            }),
          ),
        );
      });
    };
  }
  return {
    fs: wrapped,
    reset: () => {
      t0 = performance.now();
      ops = {};
    },
    report: () =>
      Object.fromEntries(
        Object.entries(ops).map(([k, v]) => [
          k,
          {
            count: v.count,
            summedMs: Math.round(v.ms),
            firstMs: Math.round(v.first),
            lastMs: Math.round(v.last),
          },
        ]),
      ),
  };
};
