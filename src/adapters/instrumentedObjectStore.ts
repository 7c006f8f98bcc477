/**
 * A wrapping ObjectStore for tests, benchmarks and fault injection: counts and records
 * requests, adds a fixed latency (with `Effect.sleep`, so `TestClock` drives it), and
 * fails requests by script — before they reach the inner store (nothing happened) or
 * after (it happened, but the answer was lost). Never used by the product wiring.
 */
import { Cause, Context, type Duration, Effect, Exit, Layer, Option } from "effect";
import {
  ObjectStore,
  putAfterInSequence,
  StoreError,
  type ObjectInfo,
  type ObjectMetadata,
  type ObjectStoreService,
  type PutCondition,
  type StoreErrorReason,
  type StoredObject,
} from "../ports/ObjectStore.js";

/** The methods of the port, as the instrumentation names them. */
export type StoreMethod = "get" | "head" | "put" | "delete" | "list";

/** Every {@link StoreMethod}. */
export const storeMethods: ReadonlyArray<StoreMethod> = ["get", "head", "put", "delete", "list"];

/** One request as the instrumentation sees it; for `list`, `key` is the prefix. */
export interface StoreRequest {
  readonly method: StoreMethod;
  readonly key: string;
  /** The write condition (puts only). */
  readonly condition?: PutCondition["_tag"];
}

/**
 * When an injected failure strikes: `before` fails without calling the inner store
 * (proven no effect); `after` performs the request, then discards its answer and fails
 * (a dropped response).
 */
export type FaultTiming = "before" | "after";

/** A decided fault: when it strikes and the reason it fails with. */
export interface FaultDecision {
  readonly when: FaultTiming;
  readonly reason: StoreErrorReason;
}

/** A scripted fault rule; every given criterion must match the request. */
export interface FaultRule {
  /** The method(s) it applies to; any method when absent. */
  readonly method?: StoreMethod | ReadonlyArray<StoreMethod>;
  /** The key: exact string, regular expression or predicate; any key when absent. */
  readonly keyPattern?: string | RegExp | ((key: string) => boolean);
  /** Only puts with this condition. */
  readonly condition?: PutCondition["_tag"];
  readonly when: FaultTiming;
  /** Default: `Unavailable` before, `Ambiguous` after. */
  readonly reason?: StoreErrorReason;
  /** How many matching requests it fails (default 1; `Infinity` for all). */
  readonly times?: number;
}

/** Options of {@link instrument}. */
export interface InstrumentOptions {
  /** Latency added before every request (or per request); none when absent. */
  readonly latency?: Duration.DurationInput | ((request: StoreRequest) => Duration.DurationInput);
  /** Fault rules, consumed in order: the first matching rule with times left applies. */
  readonly faults?: ReadonlyArray<FaultRule>;
  /** Consulted before the rules; a decision fails the request, `undefined` defers to the rules. */
  readonly decide?: (request: StoreRequest) => FaultDecision | undefined;
  /** Keep a log of every request (default true); benchmarks turn it off to save memory. */
  readonly recordRequests?: boolean;
}

/** Requests seen per method, including injected failures. */
export type RequestCounts = Readonly<Record<StoreMethod, number>>;

/** How a logged request ended: `ok`, its failure reason, or neither (interrupted, died). */
export type RequestOutcome = "ok" | StoreErrorReason | "interrupted" | "defect";

/** One logged request and how it ended (`ok` while still running). */
export interface RequestRecord extends StoreRequest {
  readonly outcome: RequestOutcome;
  /** Whether the outcome was an injected fault. */
  readonly injected: boolean;
}

/** The instrumented store and its controls. Controls never fail. */
export interface InstrumentedObjectStore {
  /** The wrapping store: same identity and semantics as the inner one, plus the instrumentation. */
  readonly store: ObjectStoreService;
  readonly counts: Effect.Effect<RequestCounts>;
  /** Every request so far, in the order they started (empty when recording is off). */
  readonly requests: Effect.Effect<ReadonlyArray<RequestRecord>>;
  /** Zeroes the counts and clears the request log. */
  readonly reset: Effect.Effect<void>;
  /** Appends fault rules after the pending ones. */
  readonly inject: (...rules: ReadonlyArray<FaultRule>) => Effect.Effect<void>;
  /** Drops every pending fault rule (the `decide` function stays). */
  readonly clearFaults: Effect.Effect<void>;
  /** How many rules still have failures left. */
  readonly pendingFaults: Effect.Effect<number>;
  /**
   * Overwrites `key` in the inner store (uninstrumented, unconditional, new ETag) with
   * `mutate(body)`; by default the last byte's lowest bit is flipped (an empty body
   * becomes one zero byte). Fails with `NotFound` when the key is absent.
   */
  readonly corrupt: (
    key: string,
    mutate?: (body: Uint8Array) => Uint8Array,
  ) => Effect.Effect<void, StoreError>;
  /** Deletes `key` from the inner store, uninstrumented. */
  readonly remove: (key: string) => Effect.Effect<void, StoreError>;
}

const zeroCounts = (): Record<StoreMethod, number> => ({
  get: 0,
  head: 0,
  put: 0,
  delete: 0,
  list: 0,
});

const flipLastBit = (body: Uint8Array): Uint8Array => {
  if (body.length === 0) return new Uint8Array(1);
  const copy = body.slice();
  copy[copy.length - 1] = (copy[copy.length - 1] ?? 0) ^ 1;
  return copy;
};

const keyMatches = (pattern: FaultRule["keyPattern"], key: string): boolean =>
  pattern === undefined
    ? true
    : typeof pattern === "string"
      ? pattern === key
      : pattern instanceof RegExp
        ? new RegExp(pattern.source, pattern.flags.replace("g", "")).test(key)
        : pattern(key);

const ruleMatches = (rule: FaultRule, request: StoreRequest): boolean => {
  const methods = rule.method === undefined ? storeMethods : [rule.method].flat();
  return (
    methods.includes(request.method) &&
    keyMatches(rule.keyPattern, request.key) &&
    (rule.condition === undefined || rule.condition === request.condition)
  );
};

/**
 * Wraps `inner`. Each request: counted and logged, delayed by the latency, then either
 * failed by the first applicable fault (from `decide`, else the first matching rule
 * with times left, which consumes one) or passed to `inner` unchanged. Injected
 * failures are `StoreError`s whose message starts with `injected:`.
 */
export const instrument = (
  inner: ObjectStoreService,
  options: InstrumentOptions = {},
): InstrumentedObjectStore => {
  let counts = zeroCounts();
  let log: RequestRecord[] = [];
  let rules: Array<{ rule: FaultRule; left: number }> = (options.faults ?? []).map((rule) => ({
    rule,
    left: rule.times ?? 1,
  }));
  const recording = options.recordRequests ?? true;

  const nextFault = (request: StoreRequest): FaultDecision | undefined => {
    const decided = options.decide?.(request);
    if (decided !== undefined) return decided;
    const entry = rules.find((r) => r.left > 0 && ruleMatches(r.rule, request));
    if (entry === undefined) return undefined;
    entry.left -= 1;
    rules = rules.filter((r) => r.left > 0);
    const when = entry.rule.when;
    return { when, reason: entry.rule.reason ?? (when === "before" ? "Unavailable" : "Ambiguous") };
  };

  const wrap = <A>(
    request: StoreRequest,
    perform: Effect.Effect<A, StoreError>,
  ): Effect.Effect<A, StoreError> =>
    Effect.suspend(() => {
      counts[request.method] += 1;
      // The log this request went into, even if `reset` replaces it meanwhile.
      const ownLog = log;
      const index = recording
        ? ownLog.push({ ...request, outcome: "ok", injected: false }) - 1
        : -1;
      let injected = false;
      const inject = (fault: FaultDecision) => {
        injected = true;
        return Effect.fail(
          new StoreError({
            reason: fault.reason,
            message: `injected: ${request.method} failed ${fault.when} the request`,
          }),
        );
      };
      const latency = options.latency;
      return Effect.gen(function* () {
        if (latency !== undefined) {
          yield* Effect.sleep(typeof latency === "function" ? latency(request) : latency);
        }
        const fault = nextFault(request);
        if (fault?.when === "before") return yield* inject(fault);
        const exit = yield* Effect.exit(perform);
        if (fault?.when === "after") return yield* inject(fault);
        return yield* exit;
      }).pipe(
        Effect.onExit((exit) =>
          Effect.sync(() => {
            const entry = ownLog[index];
            if (entry !== undefined)
              ownLog[index] = { ...entry, outcome: outcomeOf(exit), injected };
          }),
        ),
      );
    });

  const store: ObjectStoreService = {
    identity: inner.identity,
    get: (key): Effect.Effect<Option.Option<StoredObject>, StoreError> =>
      wrap({ method: "get", key }, inner.get(key)),
    head: (key): Effect.Effect<Option.Option<ObjectInfo>, StoreError> =>
      wrap({ method: "head", key }, inner.head(key)),
    put: (key: string, body: Uint8Array, condition: PutCondition, metadata?: ObjectMetadata) =>
      wrap(
        { method: "put", key, condition: condition._tag },
        metadata === undefined
          ? inner.put(key, body, condition)
          : inner.put(key, body, condition, metadata),
      ),
    // The gate first, then an ordinary (counted, faultable) put: requests as before.
    putAfter: (key, body, condition, after) =>
      putAfterInSequence(store.put)(key, body, condition, after),
    delete: (key, options) => wrap({ method: "delete", key }, inner.delete(key, options)),
    list: (prefix) => wrap({ method: "list", key: prefix }, inner.list(prefix)),
  };

  return {
    store,
    counts: Effect.sync(() => ({ ...counts })),
    requests: Effect.sync(() => [...log]),
    reset: Effect.sync(() => {
      counts = zeroCounts();
      log = [];
    }),
    inject: (...added) =>
      Effect.sync(() => {
        rules = [...rules, ...added.map((rule) => ({ rule, left: rule.times ?? 1 }))];
      }),
    clearFaults: Effect.sync(() => {
      rules = [];
    }),
    pendingFaults: Effect.sync(() => rules.length),
    corrupt: (key, mutate = flipLastBit) =>
      inner.get(key).pipe(
        Effect.flatMap(
          Option.match({
            onNone: () =>
              Effect.fail(
                new StoreError({ reason: "NotFound", message: "corrupt: the key does not exist" }),
              ),
            onSome: (object) =>
              inner.put(key, mutate(object.body), { _tag: "Unconditional" }).pipe(Effect.asVoid),
          }),
        ),
      ),
    remove: (key) => inner.delete(key),
  };
};

const outcomeOf = <A>(exit: Exit.Exit<A, StoreError>): RequestOutcome =>
  Exit.isSuccess(exit)
    ? "ok"
    : Option.match(Cause.failureOption(exit.cause), {
        onSome: (error) => error.reason,
        onNone: () => (Cause.isInterruptedOnly(exit.cause) ? "interrupted" : "defect"),
      });

/** The controls of the instrumented store provided by {@link layer}. */
export class Instrumentation extends Context.Tag("quire/Instrumentation")<
  Instrumentation,
  InstrumentedObjectStore
>() {}

/**
 * A layer that wraps the {@link ObjectStore} it is given with {@link instrument} and
 * provides the wrapped store as ObjectStore plus its controls as {@link Instrumentation}.
 */
export const layer = (
  options: InstrumentOptions = {},
): Layer.Layer<ObjectStore | Instrumentation, never, ObjectStore> =>
  Layer.effectContext(
    Effect.map(ObjectStore, (inner) => {
      const instrumented = instrument(inner, options);
      return Context.make(ObjectStore, instrumented.store).pipe(
        Context.add(Instrumentation, instrumented),
      );
    }),
  );
