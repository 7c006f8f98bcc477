/**
 * The local channel port: one request and one answer between processes of one user on
 * one host, at a name only that user's processes can reach. `quire serve` processes sharing a file store use it to
 * let one of them run the others' calls (app/share), so that their commits publish in
 * batches rather than racing each other for `current`.
 */
import { Context, Data, type Effect, type Scope } from "effect";

/**
 * Why a channel operation failed:
 * - `Unreachable`: nobody listens at the name.
 * - `InUse`: a live process already listens at the name.
 * - `Broken`: the connection ended before a whole answer arrived, or the answer was
 *   not one frame of at most the allowed size.
 * - `Unresponsive`: the listener accepted the connection but did not acknowledge the
 *   request in time (a stopped or wedged process): its handler never started, and never
 *   starts, even once the listener resumes and reads the request.
 * - `Silent`: the listener acknowledged the request, then sent nothing (no sign of
 *   life, no answer) for the allowed silence — stopped or wedged mid-call. Its handler
 *   may not have started, may be running, may have finished, or may still run once
 *   the listener resumes (it then finds the connection closed and is interrupted).
 * - `Unusable`: the channel can never work in this process: its directory failed its
 *   check (not this user's, not a directory, open to others, or replaced by one that
 *   is), the name or its socket path is not one this host accepts, or binding in it
 *   is refused for good (permission denied, a read-only file system, one without Unix
 *   sockets).
 * - `Other`: anything else, mostly passing (out of descriptors or memory: EMFILE,
 *   ENFILE, EAGAIN, ENOMEM, …).
 */
export class ChannelError extends Data.TaggedError("ChannelError")<{
  readonly reason:
    "Unreachable" | "InUse" | "Broken" | "Unresponsive" | "Silent" | "Unusable" | "Other";
  readonly name: string;
  readonly message: string;
}> {}

/** Handles one request frame; its answer frame is sent back. Never fails. */
export type ChannelHandler = (request: string) => Effect.Effect<string>;

/** A listener started by {@link LocalChannelService.listen}. */
export interface Listener {
  /**
   * Whether the name still leads to this listener. Two processes taking over a dead
   * listener's name at the same instant may both start listening, and only one of them
   * is reached; the other learns it here. Never fails.
   */
  readonly reachable: Effect.Effect<boolean>;
}

/** The operations of a local channel. Frames are strings without a newline. */
export interface LocalChannelService {
  /**
   * Listens at `name` (a short token: letters, digits, `-`) while the scope lives, taking
   * it over from a listener that died. Each
   * connection carries one request frame of at most `maxBytes`; `handle`'s answer goes
   * back and the connection closes. While a handler runs, its caller gets a sign of
   * life every `heartbeatMs`, so that a caller can tell a long call from a stopped
   * listener (see {@link request}'s `silenceMs`). A connection that closes before its answer, or
   * sends an oversized or unterminated frame, interrupts or skips its handler. Closing
   * the scope stops accepting, waits up to `graceMs` for the handlers in flight, then
   * interrupts the rest, and frees the name. Fails with `InUse`, `Unusable` or `Other`.
   */
  readonly listen: (
    name: string,
    handle: ChannelHandler,
    options: {
      readonly maxBytes: number;
      readonly graceMs: number;
      readonly heartbeatMs: number;
      /**
       * How long a connection may take, from its opening, to send its whole request
       * frame: one that stalls mid-frame or sends nothing is closed then, unanswered.
       */
      readonly requestMs: number;
      /**
       * The most connections open at once (each may hold a request of up to `maxBytes`):
       * one beyond it is closed as soon as it is accepted, unread, so its caller finds
       * the connection closed before any acknowledgement (`Broken`) and nothing of it ran.
       */
      readonly maxConnections: number;
    },
  ) => Effect.Effect<Listener, ChannelError, Scope.Scope>;
  /**
   * Sends one request frame to the listener at `name` and waits for its answer frame (at most
   * `maxBytes`). A listener acknowledges a request as soon as it has read it; without
   * that within `ackTimeoutMs` the request fails with `Unresponsive`; after it, a gap of
   * more than `silenceMs` with nothing from the listener (neither a sign of life nor
   * part of the answer) fails it with `Silent` and closes the connection, so the wait
   * is bounded however long the listener stays stopped. `silenceMs` must exceed the
   * listener's `heartbeatMs` with room for a busy event loop. Interrupting a request
   * closes the connection, which interrupts the handler. Fails with `Unreachable`,
   * `Broken`, `Unresponsive`, `Silent`, `Unusable` or `Other`.
   */
  readonly request: (
    name: string,
    request: string,
    options: {
      readonly maxBytes: number;
      readonly ackTimeoutMs: number;
      readonly silenceMs: number;
    },
  ) => Effect.Effect<string, ChannelError>;
}

/** The LocalChannel port. */
export class LocalChannel extends Context.Tag("quire/LocalChannel")<
  LocalChannel,
  LocalChannelService
>() {}
