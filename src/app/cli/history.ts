/**
 * `quire log` (SPEC §11): the notebook's publications on stdout, as text or (`--json`)
 * one JSON object; a domain error as the candid error text on stderr, like pull and
 * commit (run.ts).
 */
import { Effect } from "effect";
import { renderCliError } from "../../domain/cliReport.js";
import { logJson, renderLog } from "../../domain/logReport.js";
import type { RedactOptions } from "../../domain/redact.js";
import { IdGenerator } from "../../ports/IdGenerator.js";
import type { Invocation } from "../config.js";
import { Notebook } from "../Notebook.js";
import { defectsAsInternal } from "./defects.js";
import { type Terminal, exitCodes } from "./terminal.js";

/** A `quire log` invocation. */
export type LogInvocation = Extract<Invocation, { readonly _tag: "Log" }>;

/**
 * Runs `quire log`: status 0 with the log on stdout, or 1 with the error on stderr (a
 * defect becomes ENGINE_FAILED/INTERNAL, its cause logged under the diagnosticId).
 */
export const runLog = (
  invocation: LogInvocation,
  terminal: Terminal,
  redaction: RedactOptions,
): Effect.Effect<number, never, Notebook | IdGenerator> =>
  Effect.gen(function* () {
    const diagnosticId = yield* (yield* IdGenerator).diagnosticId;
    const notebook = yield* Notebook;
    const result = yield* defectsAsInternal(
      notebook.log({
        path: invocation.path,
        limit: invocation.limit,
        ...(invocation.file === undefined ? {} : { file: invocation.file }),
      }),
      "log",
      diagnosticId,
    ).pipe(Effect.either, Effect.annotateLogs("diagnosticId", diagnosticId));
    if (result._tag === "Right") {
      terminal.out(
        invocation.json
          ? logJson(result.right)
          : renderLog(result.right, { color: terminal.outColor, full: invocation.full }),
      );
      return exitCodes.ok;
    }
    terminal.err(
      renderCliError(
        result.left,
        diagnosticId,
        invocation.config.pathSets,
        { color: terminal.errColor },
        redaction,
      ),
    );
    return exitCodes.reported;
  }).pipe(Effect.annotateLogs({ module: "cli" }));
