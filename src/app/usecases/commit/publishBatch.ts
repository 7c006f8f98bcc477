/**
 * Group commit within one process (SPEC §6.2 step 6): the commits of a process's
 * working copies on one store publish in batches, each batch with one compare-and-swap
 * of `current`.
 *
 * Why: commits of one process used to take turns (arrival order), each turn holding the
 * store from reading `current` to swapping it — the pack upload and the manifest write,
 * three durable rounds on the file store. One turn at a time bounded a process's
 * throughput to one commit per window whatever the cores or the disk could do
 * (measured: 8 library writers, ~50 commits/s, the disk mostly waiting). In a batch the
 * members still prepare one after another, in arrival order, each merging onto the
 * state the members before it are publishing (from memory: their packs are in the
 * recent packs); then they upload their packs together, and one swap adds every
 * member's publication to `current` — each its own pack, generation and message, as if
 * they had published one after another. A batch is formed from whoever is waiting
 * when it starts and whoever arrives while its members prepare; commits that arrive
 * during its swap form the next one.
 *
 * What a member must respect:
 * - A member that starts from the batch's tip ({@link BatchStart} `Tip`) merges onto
 *   publications that are not accepted yet, so any conclusion but publishing is
 *   provisional: it must conclude "try again" and next time ask for a start of its own
 *   (`ownRead`), which begins a new batch.
 * - The swap is all or nothing: every member's publication is accepted, or none is.
 *   When a member's upload fails it fails with its own error and the others are told
 *   the batch was aborted (nothing published); they try again. When the member making
 *   the swap is interrupted (a shutdown) or dies once its store request may have
 *   started, the others fail with STORAGE_FAILURE/PUBLICATION_UNKNOWN: it may have
 *   landed or not, and their rewrite intents settle it at their copies' next call.
 *
 * Batches on one store run one at a time, process-wide (every Notebook service shares
 * them); races with other processes remain, and the compare-and-swap decides them. A
 * commit made from inside a batch on the same store (a store wrapper publishing on
 * another copy's behalf, as tests of lost races do) is a batch of its own instead of
 * waiting for its caller.
 */
import { Cause, Effect, Exit, FiberRef, Option } from "effect";
import { domainError, type DomainError } from "../../../domain/errors.js";
import type { Manifest } from "../../../domain/manifest.js";

/** Where a member of a batch starts. */
export type BatchStart =
  /** First publisher of its batch: it reads `current` (or what this process last wrote). */
  | { readonly _tag: "Own" }
  /**
   * After earlier members who publish: `manifest` is what `current` will be if their
   * swap succeeds, `etag` what that swap is conditional on.
   */
  | { readonly _tag: "Tip"; readonly manifest: Manifest; readonly etag: string };

/** The state a publishing member merged onto, as it read it. */
export interface PublishFrom {
  readonly manifest: Option.Option<Manifest>;
  /** The ETag the swap is conditional on (`None`: `current` is absent). */
  readonly etag: Option.Option<string>;
  /** Read from what this process last wrote rather than from `current` itself. */
  readonly fromWritten: boolean;
}

/** How a swap of `current` for a batch ended. */
export type Swapped =
  /** `current` is now the batch's manifest (with, perhaps, other writers' publications after it). */
  | { readonly _tag: "Accepted"; readonly etag: Option.Option<string> }
  /** Another writer's swap accepted the batch's publications (commit/staging.ts). */
  | { readonly _tag: "Included"; readonly manifest: Manifest }
  /** Another publication replaced `current` first; nothing was published. */
  | { readonly _tag: "Lost" };

/** A publishing member as the swap sees it: its pack and its commit's ticket. */
export interface SwapMember {
  /** The member's pack (the increment `next` adds for it). */
  readonly pack: Uint8Array;
  /** A UUIDv7 taken when the member's commit started: the older, the longer it waits. */
  readonly ticket: string;
}

/**
 * The swap of `current`, as the member who makes it for its batch would make it:
 * `next` on `from`, once `after` has succeeded; `members` are the batch's, in order.
 */
export type Swap = (
  next: Manifest,
  from: PublishFrom,
  after: Effect.Effect<void, BatchAborted>,
  members: ReadonlyArray<SwapMember>,
) => Effect.Effect<Swapped, DomainError | BatchAborted>;

/** What a member made of its start. */
export type Prepared<C> =
  | { readonly _tag: "Concluded"; readonly conclusion: C }
  | {
      readonly _tag: "Publish";
      /** For a `Tip` start, the tip itself. */
      readonly from: PublishFrom;
      /** `from.manifest` with the member's publication added. */
      readonly next: Manifest;
      /** Uploads the pack and makes the local records durable; before the swap. */
      readonly upload: Effect.Effect<void, DomainError>;
      /** The member's pack (the increment `next` adds) and its commit's ticket. */
      readonly member: SwapMember;
      /** Used if this member makes the batch's swap. */
      readonly swap: Swap;
    };

/** How a batch ended, for its publishers. */
type Outcome =
  /** The batch's swap made `manifest` current, with every member's publication. */
  | { readonly _tag: "Accepted"; readonly manifest: Manifest; readonly etag: Option.Option<string> }
  /** Another writer's swap accepted every member's publication; `manifest` names them. */
  | { readonly _tag: "Included"; readonly manifest: Manifest }
  /** Another process replaced `current` first; nothing was published. */
  | { readonly _tag: "Lost"; readonly fromWritten: boolean }
  /** Another member failed or went away before the swap; nothing was published. */
  | { readonly _tag: "Aborted" }
  /** The swap failed (its member's part of {@link inBatch}'s failure). */
  | { readonly _tag: "Failed"; readonly error: DomainError };

/** How a member's part in a batch ended (a failed swap is a failure of {@link inBatch}). */
export type Took<C> =
  | { readonly _tag: "Concluded"; readonly conclusion: C }
  | Exclude<Outcome, { readonly _tag: "Failed" }>;

/** The failure a swap's `after` reports when a member's upload did not complete. */
export class BatchAborted {
  readonly _tag = "BatchAborted";
}

/** One publishing member, as its batch sees it. */
interface Publisher {
  readonly member: SwapMember;
  /** Whether its upload succeeded; `undefined` while it runs. */
  uploaded: boolean | undefined;
  readonly uploadWaiters: Array<() => void>;
  outcome: Outcome | undefined;
  readonly outcomeWaiters: Array<() => void>;
}

interface Batch {
  /** The state the batch's swap is conditional on, once its first publisher has read it. */
  base: PublishFrom | undefined;
  /** The manifest the swap will write so far. */
  tip: Manifest | undefined;
  readonly publishers: Publisher[];
  /** A member was granted its start and has not reported yet. */
  preparing: Member | undefined;
  /** No member joins any more: the swap's manifest is final. */
  sealed: boolean;
  readonly sealWaiters: Array<() => void>;
  /** Its publishers have their outcome (or it ended without any). */
  finished: boolean;
}

/** A member granted a start in a batch. */
interface Member {
  readonly batch: Batch;
  readonly start: BatchStart;
}

interface Ticket {
  state: "waiting" | "granted" | "abandoned";
  readonly ownRead: boolean;
  readonly grant: (member: Member) => void;
}

/** The batches of one store in this process. */
interface Line {
  readonly queue: Ticket[];
  batch: Batch | undefined;
}

/** The most publishers in one batch. */
const maxPublishers = 32;

const lines = new Map<string, Line>();

const lineOf = (storeIdentity: string): Line => {
  let line = lines.get(storeIdentity);
  if (line === undefined) {
    line = { queue: [], batch: undefined };
    lines.set(storeIdentity, line);
  }
  return line;
};

const wake = (waiters: Array<() => void>): void => {
  for (const waiter of waiters.splice(0)) waiter();
};

const seal = (batch: Batch): void => {
  if (batch.sealed) return;
  batch.sealed = true;
  wake(batch.sealWaiters);
};

/** Seals `batch` and, if it is the line's current one, lets the next one form. */
const retire = (line: Line, batch: Batch): void => {
  seal(batch);
  if (line.batch === batch) line.batch = undefined;
};

/**
 * Moves the line on: grants the next waiting ticket a start in the current batch (a
 * new one if none), or seals the batch when nobody can join it. A sealed batch with
 * publishers stays current until its swap ends it ({@link finish}).
 */
const advance = (line: Line): void => {
  for (;;) {
    while (line.queue[0] !== undefined && line.queue[0].state !== "waiting") line.queue.shift();
    const next = line.queue[0];
    let batch = line.batch;
    if (batch === undefined) {
      if (next === undefined) return;
      batch = {
        base: undefined,
        tip: undefined,
        publishers: [],
        preparing: undefined,
        sealed: false,
        sealWaiters: [],
        finished: false,
      };
      line.batch = batch;
    }
    if (batch.preparing !== undefined) return;
    if (!batch.sealed && !batch.finished && next !== undefined) {
      const etag = batch.base?.etag;
      const start: BatchStart | undefined =
        batch.tip === undefined
          ? { _tag: "Own" }
          : !next.ownRead &&
              batch.publishers.length < maxPublishers &&
              etag !== undefined &&
              Option.isSome(etag)
            ? { _tag: "Tip", manifest: batch.tip, etag: etag.value }
            : undefined;
      if (start !== undefined) {
        line.queue.shift();
        next.state = "granted";
        const member = { batch, start };
        batch.preparing = member;
        next.grant(member);
        return;
      }
    }
    seal(batch);
    if (batch.publishers.length > 0 && !batch.finished) return;
    batch.finished = true;
    line.batch = undefined;
    if (next === undefined) return;
  }
};

/** Ends a batch (once): tells its publishers how, and lets the next batch form. */
const finish = (line: Line, batch: Batch, outcome: Outcome): void => {
  if (batch.finished) return;
  batch.finished = true;
  for (const publisher of batch.publishers) {
    publisher.outcome = outcome;
    wake(publisher.outcomeWaiters);
  }
  // A member still preparing reports into a finished batch, which then makes way.
  if (batch.preparing !== undefined) return;
  retire(line, batch);
  advance(line);
};

/**
 * A member's report once it has prepared (at most once; later calls do nothing): with
 * its publication, or `None` when it publishes nothing. Its publisher record, unless
 * the batch has already ended (then it publishes nothing either).
 */
const report = (
  line: Line,
  member: Member,
  publishing: Option.Option<{
    readonly from: PublishFrom;
    readonly next: Manifest;
    readonly member: SwapMember;
  }>,
): Publisher | undefined => {
  const batch = member.batch;
  if (batch.preparing !== member) return undefined;
  batch.preparing = undefined;
  let publisher: Publisher | undefined;
  if (batch.finished) {
    retire(line, batch);
  } else if (
    Option.isSome(publishing) &&
    // A member on the tip publishes on the tip itself, or not in this batch.
    (batch.tip === undefined || Option.contains(publishing.value.from.manifest, batch.tip))
  ) {
    publisher = {
      member: publishing.value.member,
      uploaded: undefined,
      uploadWaiters: [],
      outcome: undefined,
      outcomeWaiters: [],
    };
    batch.base ??= publishing.value.from;
    batch.tip = publishing.value.next;
    batch.publishers.push(publisher);
  }
  advance(line);
  return publisher;
};

/** Waits on `ready` (a check and a waiters list) without blocking the thread. */
const waitFor = (ready: () => boolean, waiters: Array<() => void>): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (ready()) return resume(Effect.void);
    const waiter = () => resume(Effect.void);
    waiters.push(waiter);
    return Effect.sync(() => {
      const index = waiters.indexOf(waiter);
      if (index >= 0) waiters.splice(index, 1);
    });
  });

/** The longest step of a wait for a place: a timer is checked for lateness once a step. */
const waitStepMs = 250;

/**
 * How much later than due a step's timer may fire and still count: later, the process
 * stood still (stopped by SIGSTOP, a suspended machine or VM) and the step counts nothing.
 */
const stoodStillMs = 1_000;

/**
 * How much longer than its budget a wait may last on the wall clock, whatever stood
 * still: a process whose own work blocks it for over {@link stoodStillMs} per step looks
 * stopped, and under that overload the wait must still end (REMOTE_BUSY, promptly enough).
 */
const stoodStillAtMostMs = 30_000;

/**
 * Queues for a place in a batch; `None` after `maxWaitMs` of the process running without
 * one. The wait is measured in steps: a step whose timer fires more than
 * {@link stoodStillMs} late counts nothing, since the process was not running (it was
 * stopped and continued: until 2026-12-07 every timer then fired at once and a writer
 * stopped for a few seconds answered REMOTE_BUSY, though the place came right after).
 * On the wall clock it still ends {@link stoodStillAtMostMs} after its budget at the latest.
 * One state per ticket decides, whatever order the grant, the timer and an
 * interruption happen in: the line skips an abandoned ticket, and a member granted a
 * place and then interrupted before taking it reports at once.
 */
const waitForPlace = (
  line: Line,
  ownRead: boolean,
  maxWaitMs: number,
): Effect.Effect<Option.Option<Member>> =>
  Effect.async((resume) => {
    let granted: Member | undefined;
    const ticket: Ticket = {
      state: "waiting",
      ownRead,
      grant: (member) => {
        clearTimeout(timer);
        granted = member;
        resume(Effect.succeed(Option.some(member)));
      },
    };
    let left = Math.max(0, maxWaitMs);
    const endAtLatest = performance.now() + left + stoodStillAtMostMs;
    let timer: ReturnType<typeof setTimeout>;
    const step = () => {
      const stepMs = Math.min(left, waitStepMs);
      const due = performance.now() + stepMs;
      timer = setTimeout(() => {
        if (ticket.state !== "waiting") return;
        const now = performance.now();
        if (now - due <= stoodStillMs) left -= stepMs;
        if (left > 0 && now < endAtLatest) return step();
        ticket.state = "abandoned";
        resume(Effect.succeedNone);
      }, stepMs);
    };
    step();
    line.queue.push(ticket);
    advance(line);
    return Effect.sync(() => {
      clearTimeout(timer);
      if (ticket.state === "waiting") ticket.state = "abandoned";
      else if (granted !== undefined) report(line, granted, Option.none());
    });
  });

/** The stores whose batch the current fiber (or the fiber that forked it) is in. */
const batchesJoined = FiberRef.unsafeMake<ReadonlySet<string>>(new Set());

/**
 * Takes part in a batch on the store `storeIdentity`: waits (at most `maxWaitMs`) for a
 * place, runs `prepare` on the start it is given and, when it publishes, uploads and
 * waits for the batch's swap (making it, when first to publish). `ownRead` asks for an
 * `Own` start: the member begins a new batch rather than joining one under way.
 * `None` when no place came in time (nothing ran). Fails with `prepare`'s failure, with
 * its own upload's failure, or with the swap's failure (the publication's fate is then
 * that of the batch: unknown, or refused).
 */
export const inBatch =
  (storeIdentity: string, maxWaitMs: number, ownRead: boolean) =>
  <C>(
    prepare: (start: BatchStart) => Effect.Effect<Prepared<C>, DomainError>,
  ): Effect.Effect<Option.Option<Took<C>>, DomainError> =>
    FiberRef.get(batchesJoined).pipe(
      Effect.flatMap((joined) => {
        // Inside a batch on this store already: a batch of its own, not queued behind it.
        const line: Line = joined.has(storeIdentity)
          ? { queue: [], batch: undefined }
          : lineOf(storeIdentity);
        const inside = Effect.locally(batchesJoined, new Set([...joined, storeIdentity]));
        return Effect.uninterruptibleMask((restore) =>
          restore(waitForPlace(line, ownRead, maxWaitMs)).pipe(
            Effect.flatMap(
              Option.match({
                onNone: () => Effect.succeedNone,
                onSome: (member) =>
                  inside(takePart(line, member, restore(prepare(member.start)), restore)).pipe(
                    Effect.asSome,
                  ),
              }),
            ),
          ),
        );
      }),
    );

type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>;

/** A granted member's part, from preparing to the batch's outcome (see inBatch). */
const takePart = <C>(
  line: Line,
  member: Member,
  prepare: Effect.Effect<Prepared<C>, DomainError>,
  restore: Restore,
): Effect.Effect<Took<C>, DomainError> =>
  Effect.gen(function* () {
    const batch = member.batch;
    const prepared = yield* prepare.pipe(
      Effect.onExit((exit) =>
        Exit.isSuccess(exit) && exit.value._tag === "Publish"
          ? Effect.void
          : Effect.sync(() => report(line, member, Option.none())),
      ),
    );
    if (prepared._tag === "Concluded") return prepared;
    const publisher = report(
      line,
      member,
      Option.some({ from: prepared.from, next: prepared.next, member: prepared.member }),
    );
    if (publisher === undefined) return { _tag: "Aborted" } as const;
    const upload = restore(prepared.upload).pipe(
      Effect.onExit((exit) =>
        Effect.sync(() => {
          publisher.uploaded = Exit.isSuccess(exit);
          wake(publisher.uploadWaiters);
        }),
      ),
    );
    if (batch.publishers[0] !== publisher) {
      yield* upload;
    } else {
      // Its own upload failing must not interrupt the swap: the swap's `after` sees the
      // failure and ends the batch as aborted (nothing written), not as unknown.
      const [uploaded] = yield* restore(
        Effect.all([Effect.either(upload), swap(line, batch, prepared.swap)], {
          concurrency: 2,
        }),
      ).pipe(
        // However the swapper's part ends, its batch ends with it.
        Effect.onExit(() => Effect.sync(() => finish(line, batch, { _tag: "Aborted" }))),
      );
      if (uploaded._tag === "Left") return yield* Effect.fail(uploaded.left);
    }
    yield* restore(waitFor(() => publisher.outcome !== undefined, publisher.outcomeWaiters));
    const outcome: Outcome = publisher.outcome ?? { _tag: "Aborted" };
    if (outcome._tag === "Failed") return yield* Effect.fail(outcome.error);
    return outcome;
  });

/** What the other members are told when the swap was interrupted midway. */
const swapUnknown: Outcome = {
  _tag: "Failed",
  error: domainError({
    code: "STORAGE_FAILURE",
    reason: "PUBLICATION_UNKNOWN",
    message:
      "The publication was interrupted before the store confirmed it; pull to see whether it landed.",
  }),
};

/**
 * The first publisher's swap: once the batch is sealed, writes its tip conditional on
 * its base, after every publisher's upload; ends the batch with the outcome. Only the
 * waits and the store request itself can be interrupted: an ended swap always ends
 * its batch with what it found.
 */
const swap = (line: Line, batch: Batch, make: Swap): Effect.Effect<void> =>
  Effect.gen(function* () {
    yield* waitFor(() => batch.sealed, batch.sealWaiters);
    const base = batch.base;
    const tip = batch.tip;
    if (batch.finished || base === undefined || tip === undefined) return;
    // Set once every upload succeeded: from then on the store request may be under way.
    let writing = false;
    const uploads = Effect.forEach(
      batch.publishers,
      (publisher) =>
        waitFor(() => publisher.uploaded !== undefined, publisher.uploadWaiters).pipe(
          Effect.flatMap(() =>
            publisher.uploaded === true ? Effect.void : Effect.fail(new BatchAborted()),
          ),
        ),
      { discard: true },
    ).pipe(Effect.tap(() => Effect.sync(() => (writing = true))));
    yield* Effect.uninterruptibleMask((restore) =>
      restore(
        make(
          tip,
          base,
          uploads,
          batch.publishers.map((publisher) => publisher.member),
        ),
      ).pipe(
        Effect.exit,
        Effect.flatMap((swapped) => {
          if (Exit.isSuccess(swapped)) {
            const value = swapped.value;
            finish(
              line,
              batch,
              value._tag === "Accepted"
                ? { _tag: "Accepted", manifest: tip, etag: value.etag }
                : value._tag === "Included"
                  ? value
                  : { _tag: "Lost", fromWritten: base.fromWritten },
            );
            return Effect.void;
          }
          const failure = Cause.failureOption(swapped.cause);
          if (Option.isSome(failure)) {
            finish(
              line,
              batch,
              failure.value instanceof BatchAborted
                ? { _tag: "Aborted" }
                : { _tag: "Failed", error: failure.value },
            );
            return Effect.void;
          }
          // Interrupted (a shutdown beyond its grace period) or died: once the request
          // may have been made it may have landed or not, and the other members must
          // not be told either way; before that, nothing was written. Then it goes on. A
          // staged swap has tried to withdraw its record by now (commit/staging.ts, at
          // most 2 s), so that it does not land after this answer in a swap their next
          // commits would lose to; a failed or late deletion, or a writer that read the
          // record before it, can still take it (storage.md, Staged publications).
          finish(line, batch, writing ? swapUnknown : { _tag: "Aborted" });
          return Cause.isInterruptedOnly(swapped.cause)
            ? Effect.interrupt
            : Effect.die(Cause.squash(swapped.cause));
        }),
      ),
    );
  });
