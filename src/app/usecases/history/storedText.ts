/** Reading stored content as notebook text, for the history's counts and diffs. */
import { Effect } from "effect";
import { decodeText } from "../../../domain/content.js";
import type { DomainError } from "../../../domain/errors.js";
import type { RemoteContext } from "../commit/remote.js";

/** The text of a stored content, or `undefined` for none (absent, or not notebook text). */
export const storedText = (
  ctx: RemoteContext,
  id: string | undefined,
): Effect.Effect<string | undefined, DomainError> =>
  id === undefined
    ? Effect.succeed(undefined)
    : ctx.blobs.load(id).pipe(
        Effect.map((bytes) => {
          const decoded = decodeText(bytes);
          return "text" in decoded ? decoded.text : undefined;
        }),
      );
