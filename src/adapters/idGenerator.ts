/**
 * The IdGenerator port: RFC 9562 UUIDv7 with the time taken from the Effect `Clock`
 * (so `TestClock` controls it) and randomness from `node:crypto`.
 *
 * Layout (RFC 9562 §5.7 with §6.2 method 1, a fixed-length dedicated counter):
 *   48 bits unix_ts_ms | 4 bits version 7 | 42 bits counter (12 in rand_a, 30 at the top
 *   of rand_b, around the 2 variant bits 10) | 32 random bits.
 * The counter is seeded randomly (top bit clear, leaving 2^41 increments of headroom)
 * each new millisecond and incremented within one; if the clock stands still or goes
 * back, the previous timestamp is kept and the counter incremented, and on counter
 * overflow the timestamp is advanced by one millisecond. Ids of one generator are
 * therefore strictly increasing, as strings and as bytes.
 */
import { randomBytes } from "node:crypto";
import { Clock, Effect, Layer } from "effect";
import { IdGenerator, type IdGeneratorService } from "../ports/IdGenerator.js";

const counterLimit = 2 ** 42;
const seedLimit = 2 ** 41;
const lowCounterBits = 2 ** 30;
const maxTimestamp = 2 ** 48 - 1;

interface State {
  readonly timestamp: number;
  readonly counter: number;
}

/** A fresh counter seed below 2^41 from 6 random bytes. */
const freshSeed = (): number => randomBytes(6).readUIntBE(0, 6) % seedLimit;

const advance = (previous: State | undefined, now: number): State => {
  const clamped = Math.min(Math.max(0, Math.floor(now)), maxTimestamp);
  if (previous === undefined || clamped > previous.timestamp)
    return { timestamp: clamped, counter: freshSeed() };
  const counter = previous.counter + 1;
  return counter < counterLimit
    ? { timestamp: previous.timestamp, counter }
    : { timestamp: previous.timestamp + 1, counter: freshSeed() };
};

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex");

const format = ({ timestamp, counter }: State): string => {
  const bytes = new Uint8Array(16);
  const high = Math.floor(counter / lowCounterBits); // 12 bits: rand_a
  const low = counter % lowCounterBits; // 30 bits: top of rand_b
  const timestampHigh = Math.floor(timestamp / 2 ** 16);
  bytes[0] = (timestampHigh >>> 24) & 0xff;
  bytes[1] = (timestampHigh >>> 16) & 0xff;
  bytes[2] = (timestampHigh >>> 8) & 0xff;
  bytes[3] = timestampHigh & 0xff;
  bytes[4] = (timestamp >>> 8) & 0xff;
  bytes[5] = timestamp & 0xff;
  bytes[6] = 0x70 | (high >>> 8);
  bytes[7] = high & 0xff;
  bytes[8] = 0x80 | ((low >>> 24) & 0x3f);
  bytes[9] = (low >>> 16) & 0xff;
  bytes[10] = (low >>> 8) & 0xff;
  bytes[11] = low & 0xff;
  bytes.set(randomBytes(4), 12);
  const text = hex(bytes);
  return `${text.slice(0, 8)}-${text.slice(8, 12)}-${text.slice(12, 16)}-${text.slice(16, 20)}-${text.slice(20)}`;
};

/**
 * A generator with its own monotonic state: `uuidv7` reads the Effect `Clock` and never
 * fails; `diagnosticId` is 16 lowercase hex characters (64 random bits).
 */
export const make = (): IdGeneratorService => {
  let state: State | undefined;
  return {
    uuidv7: Effect.map(Clock.currentTimeMillis, (now) => {
      // Synchronous read-modify-write: no other fiber can interleave.
      state = advance(state, now);
      return format(state);
    }),
    diagnosticId: Effect.sync(() => randomBytes(8).toString("hex")),
  };
};

/** The {@link IdGenerator} port; each build of the layer has its own monotonic state. */
export const layer: Layer.Layer<IdGenerator> = Layer.sync(IdGenerator, make);
