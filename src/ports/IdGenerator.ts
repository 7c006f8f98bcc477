/** The id generator port: time-ordered unique ids for publications and probe keys. */
import { Context, type Effect } from "effect";

/** The operations of an id generator. */
export interface IdGeneratorService {
  /** A fresh RFC 9562 UUIDv7 in lowercase canonical form; never fails. */
  readonly uuidv7: Effect.Effect<string>;
  /** A fresh 16-character lowercase hex diagnostic id; never fails. */
  readonly diagnosticId: Effect.Effect<string>;
}

/** The IdGenerator port. */
export class IdGenerator extends Context.Tag("quire/IdGenerator")<
  IdGenerator,
  IdGeneratorService
>() {}
