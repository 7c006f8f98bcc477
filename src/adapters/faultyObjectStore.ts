/**
 * A fault-injecting ObjectStore: wraps another adapter and, by rule, fails a request
 * before or after it takes effect (the latter is a lost response), delays it, or
 * corrupts the body a read returns; it can also corrupt or delete a stored object
 * directly, and it counts every request. For tests, and for the torture harness
 * through the hidden `QUIRE_FAULT_INJECTION` environment switch
 * ({@link parseFaultSpec}). Never used in production configurations.
 */
import { Duration, Effect, Either, Layer, Option } from "effect";
import {
  ObjectStore,
  putAfterInSequence,
  StoreError,
  type ObjectStoreService,
  type PutCondition,
  type StoreErrorReason,
} from "../ports/ObjectStore.js";

/** The operations of the store port. */
export type StoreOp = "get" | "head" | "put" | "delete" | "list";

/**
 * What a matching request suffers:
 * - `FailBefore`: fails with `reason` (default `Unavailable`) without reaching the store;
 * - `FailAfter`: reaches the store and takes effect, then fails with `reason` (default
 *   `Ambiguous`: the response was lost);
 * - `Delay`: waits `ms` before forwarding;
 * - `CorruptResponse`: a read returns the stored body with one byte flipped (the stored
 *   object is intact);
 * - `Interleave`: runs `effect` (another participant's work, a deletion) first, then
 *   forwards the request — to place a concurrent event at an exact moment;
 * - `IfMatchCreates`: an `If-Match` put of a key that does not exist creates the key
 *   instead of failing, as MinIO releases before RELEASE.2025-09-06 did (a broken
 *   promise, for the probe to catch); on an existing key, and for any other request,
 *   it changes nothing.
 */
export type Fault =
  | { readonly _tag: "FailBefore"; readonly reason?: StoreErrorReason }
  | { readonly _tag: "FailAfter"; readonly reason?: StoreErrorReason }
  | { readonly _tag: "Delay"; readonly ms: number }
  | { readonly _tag: "CorruptResponse" }
  | { readonly _tag: "Interleave"; readonly effect: Effect.Effect<void> }
  | { readonly _tag: "IfMatchCreates" };

/** When a rule applies. Every given criterion must match. */
export interface FaultRule {
  readonly fault: Fault;
  /** The operations it applies to (default: all). */
  readonly ops?: ReadonlyArray<StoreOp>;
  /** The key (or list prefix): an exact key, a `RegExp`, or a predicate (default: any). */
  readonly key?: string | RegExp | ((key: string) => boolean);
  /** Only puts with this condition. */
  readonly condition?: PutCondition["_tag"];
  /** Let this many matching requests through first (default 0). */
  readonly skip?: number;
  /** Apply to at most this many requests, then retire (default 1; `Infinity` for always). */
  readonly times?: number;
  /** Apply to each eligible request with this probability (default 1), from the seeded generator. */
  readonly probability?: number;
}

/** One request as the wrapper saw it. */
export interface RequestRecord {
  readonly op: StoreOp;
  readonly key: string;
  /** The fault applied, if any. */
  readonly fault?: Fault["_tag"];
}

/** The wrapper and its controls. */
export interface FaultyObjectStore {
  /** The wrapped store, with the inner store's identity. */
  readonly store: ObjectStoreService;
  /** Adds a rule (rules are tried in the order added; the first that applies wins). */
  readonly inject: (rule: FaultRule) => void;
  /** Removes every rule. */
  readonly clear: () => void;
  /** Every request so far, in order. */
  readonly requests: () => ReadonlyArray<RequestRecord>;
  /** Forgets the recorded requests. */
  readonly resetRequests: () => void;
  /** How many recorded requests match `op` and, if given, start with `keyPrefix`. */
  readonly count: (op: StoreOp, keyPrefix?: string) => number;
  /** Overwrites a stored object with its bytes, one byte flipped (no-op when absent). */
  readonly corruptObject: (key: string) => Effect.Effect<void, StoreError>;
  /** Deletes a stored object behind the protocol's back. */
  readonly deleteObject: (key: string) => Effect.Effect<void, StoreError>;
}

/** Options of {@link make}. */
export interface FaultyObjectStoreOptions {
  readonly rules?: ReadonlyArray<FaultRule>;
  /** Seed of the generator behind `probability` (default 1): runs are reproducible. */
  readonly seed?: number;
}

/** mulberry32: a tiny seeded generator, good enough to pick faults reproducibly. */
const seeded = (seed: number): (() => number) => {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
};

const flipped = (body: Uint8Array): Uint8Array => {
  const copy = body.slice();
  const at = Math.floor(copy.length / 2);
  if (copy.length > 0) copy[at] = (copy[at] ?? 0) ^ 0xff;
  return copy;
};

const keyMatches = (rule: FaultRule, key: string): boolean => {
  const want = rule.key;
  if (want === undefined) return true;
  if (typeof want === "string") return want === key;
  if (want instanceof RegExp) return want.test(key);
  return want(key);
};

interface LiveRule {
  readonly rule: FaultRule;
  seen: number;
  applied: number;
}

/** Wraps `inner`. See {@link FaultyObjectStore} for the controls. */
export const make = (
  inner: ObjectStoreService,
  options: FaultyObjectStoreOptions = {},
): FaultyObjectStore => {
  const rules: LiveRule[] = [];
  const log: RequestRecord[] = [];
  const random = seeded(options.seed ?? 1);
  const inject = (rule: FaultRule) => {
    rules.push({ rule, seen: 0, applied: 0 });
  };
  for (const rule of options.rules ?? []) inject(rule);

  /** Picks the fault for one request (and records it); `undefined` to pass it through. */
  const pick = (op: StoreOp, key: string, condition?: PutCondition["_tag"]): Fault | undefined => {
    let chosen: Fault | undefined;
    for (const live of rules) {
      const { rule } = live;
      if (rule.ops !== undefined && !rule.ops.includes(op)) continue;
      if (rule.condition !== undefined && rule.condition !== condition) continue;
      // It is about If-Match puts only: no other request uses it up.
      if (rule.fault._tag === "IfMatchCreates" && condition !== "IfMatch") continue;
      if (!keyMatches(rule, key)) continue;
      if (live.applied >= (rule.times ?? 1)) continue;
      live.seen++;
      if (live.seen <= (rule.skip ?? 0)) continue;
      if (rule.probability !== undefined && random() >= rule.probability) continue;
      live.applied++;
      chosen = rule.fault;
      break;
    }
    log.push(chosen === undefined ? { op, key } : { op, key, fault: chosen._tag });
    return chosen;
  };

  const run = <A>(
    op: StoreOp,
    key: string,
    request: Effect.Effect<A, StoreError>,
    condition?: PutCondition["_tag"],
    corrupt?: (value: A) => A,
    createInstead?: Effect.Effect<A, StoreError>,
  ): Effect.Effect<A, StoreError> =>
    Effect.suspend(() => {
      const fault = pick(op, key, condition);
      if (fault === undefined) return request;
      switch (fault._tag) {
        case "FailBefore":
          return Effect.fail(
            new StoreError({
              reason: fault.reason ?? "Unavailable",
              message: `injected failure before ${op}`,
            }),
          );
        case "FailAfter":
          return request.pipe(
            Effect.zipRight(
              Effect.fail(
                new StoreError({
                  reason: fault.reason ?? "Ambiguous",
                  message: `injected lost response of ${op}`,
                }),
              ),
            ),
          );
        case "Delay":
          return Effect.sleep(Duration.millis(fault.ms)).pipe(Effect.zipRight(request));
        case "CorruptResponse":
          return corrupt === undefined ? request : request.pipe(Effect.map(corrupt));
        case "Interleave":
          return fault.effect.pipe(Effect.zipRight(request));
        case "IfMatchCreates":
          // A create where the key is missing; where it exists, the request as it was.
          return createInstead === undefined
            ? request
            : createInstead.pipe(
                Effect.catchIf(
                  (error) => error.reason === "PreconditionFailed",
                  () => request,
                ),
              );
      }
    });

  const store: ObjectStoreService = {
    identity: inner.identity,
    get: (key) =>
      run("get", key, inner.get(key), undefined, (object) =>
        Option.map(object, (o) => ({ body: flipped(o.body), etag: o.etag })),
      ),
    head: (key) => run("head", key, inner.head(key)),
    put: (key, body, condition, metadata) =>
      run(
        "put",
        key,
        inner.put(key, body, condition, metadata),
        condition._tag,
        undefined,
        condition._tag === "IfMatch"
          ? inner.put(key, body, { _tag: "IfNoneMatch" }, metadata)
          : undefined,
      ),
    // The gate first, then an ordinary (counted, faultable) put: requests as before.
    putAfter: (key, body, condition, after) =>
      putAfterInSequence(store.put)(key, body, condition, after),
    delete: (key, options) => run("delete", key, inner.delete(key, options)),
    list: (prefix) => run("list", prefix, inner.list(prefix)),
  };

  return {
    store,
    inject,
    clear: () => {
      rules.length = 0;
    },
    requests: () => [...log],
    resetRequests: () => {
      log.length = 0;
    },
    count: (op, keyPrefix) =>
      log.filter((r) => r.op === op && (keyPrefix === undefined || r.key.startsWith(keyPrefix)))
        .length,
    corruptObject: (key) =>
      inner.get(key).pipe(
        Effect.flatMap((object) =>
          Option.isNone(object)
            ? Effect.void
            : inner.put(key, flipped(object.value.body), { _tag: "Unconditional" }),
        ),
        Effect.asVoid,
      ),
    deleteObject: (key) => inner.delete(key),
  };
};

const ops: ReadonlyArray<StoreOp> = ["get", "head", "put", "delete", "list"];

/**
 * Parses the hidden fault switch: `;`-separated items, `seed=<n>` or
 * `<op>:<key prefix>:<fault>:<probability>` with op one of get/head/put/delete/list/`*`,
 * key prefix `*` for any key, fault `fail-before` (unavailable, no effect), `timeout`
 * (ambiguous, no effect), `fail-after` (a lost response: took effect), `delay-<ms>`,
 * `corrupt` or `if-match-creates`, and probability in [0, 1]. Every rule applies without a
 * limit on the number of requests; as for every rule of this store, the first that applies
 * to a request is the only one (a leading catch-all takes every request; docs/durability.md).
 * Fails with a description of the first bad item.
 */
export const parseFaultSpec = (spec: string): Either.Either<FaultyObjectStoreOptions, string> => {
  let seed = 1;
  const rules: FaultRule[] = [];
  for (const item of spec.split(";").map((part) => part.trim())) {
    if (item === "") continue;
    const seedMatch = /^seed=(\d{1,9})$/.exec(item);
    if (seedMatch !== null) {
      seed = Number(seedMatch[1]);
      continue;
    }
    const parts = item.split(":");
    const [op, prefix, faultText, probabilityText] = parts;
    if (
      parts.length !== 4 ||
      op === undefined ||
      prefix === undefined ||
      faultText === undefined ||
      probabilityText === undefined
    ) {
      return Either.left(
        `bad fault rule ${JSON.stringify(item)} (want op:prefix:fault:probability)`,
      );
    }
    const opList = op === "*" ? ops : ops.filter((candidate) => candidate === op);
    if (opList.length === 0) return Either.left(`unknown operation ${JSON.stringify(op)}`);
    let fault: Fault;
    const delay = /^delay-(\d{1,6})$/.exec(faultText);
    if (faultText === "fail-before") fault = { _tag: "FailBefore" };
    else if (faultText === "timeout") fault = { _tag: "FailBefore", reason: "Ambiguous" };
    else if (faultText === "fail-after") fault = { _tag: "FailAfter" };
    else if (faultText === "corrupt") fault = { _tag: "CorruptResponse" };
    else if (faultText === "if-match-creates") fault = { _tag: "IfMatchCreates" };
    else if (delay !== null) fault = { _tag: "Delay", ms: Number(delay[1]) };
    else return Either.left(`unknown fault ${JSON.stringify(faultText)}`);
    const probability = /^(0(\.\d+)?|1(\.0+)?)$/.test(probabilityText)
      ? Number(probabilityText)
      : Number.NaN;
    if (Number.isNaN(probability))
      return Either.left(`bad probability ${JSON.stringify(probabilityText)}`);
    rules.push({
      fault,
      ops: opList,
      ...(prefix === "*" ? {} : { key: (key: string) => key.startsWith(prefix) }),
      times: Number.POSITIVE_INFINITY,
      probability,
    });
  }
  return Either.right({ seed, rules });
};

/** `inner`'s layer wrapped by a faulty store built from `options`. */
export const layer = (
  inner: Layer.Layer<ObjectStore>,
  options: FaultyObjectStoreOptions,
): Layer.Layer<ObjectStore> =>
  Layer.effect(
    ObjectStore,
    Effect.map(ObjectStore, (store) => make(store, options).store),
  ).pipe(Layer.provide(inner));
