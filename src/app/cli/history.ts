/**
 * `quire log`, `status`, `diff`, `show`, `restore` and `revert` (SPEC §11): the answer on
 * stdout as text or (`--json`) one JSON object; a domain error as the candid error text
 * on stderr, like pull and commit (run.ts), or with `--json` as the error object on
 * stdout (domain/cliErrorJson.ts).
 */
import { Effect } from "effect";
import { cliErrorJson } from "../../domain/cliErrorJson.js";
import { renderCliError } from "../../domain/cliReport.js";
import {
  diffJson,
  renderDiff,
  renderDiffStat,
  renderRestored,
  renderShown,
  restoredJson,
  renderStatus,
  shownJson,
  statusJson,
} from "../../domain/copyStatus.js";
import type { DomainError } from "../../domain/errors.js";
import { logJson, renderLog } from "../../domain/logReport.js";
import type { RedactOptions } from "../../domain/redact.js";
import { IdGenerator } from "../../ports/IdGenerator.js";
import type { Invocation } from "../config.js";
import { Notebook } from "../Notebook.js";
import { defectsAsInternal } from "./defects.js";
import { type Terminal, exitCodes } from "./terminal.js";
import { workspaceHint } from "./workspaceHint.js";

/** A `quire log` or `quire status` invocation. */
export type HistoryInvocation = Extract<
  Invocation,
  { readonly _tag: "Log" | "Status" | "Diff" | "Show" | "Restore" | "Revert" }
>;

/**
 * Runs one of them: status 0 with the answer on stdout, or 1 with the error on stderr
 * (with `--json`, on stdout); a defect becomes ENGINE_FAILED/INTERNAL, its cause logged
 * under the diagnosticId.
 */
export const runHistory = (
  invocation: HistoryInvocation,
  terminal: Terminal,
  redaction: RedactOptions,
): Effect.Effect<number, never, Notebook | IdGenerator> =>
  Effect.gen(function* () {
    const diagnosticId = yield* (yield* IdGenerator).diagnosticId;
    const notebook = yield* Notebook;
    const answer: Effect.Effect<string, DomainError> =
      invocation._tag === "Log"
        ? notebook
            .log({
              path: invocation.path,
              limit: invocation.limit,
              ...(invocation.file === undefined ? {} : { file: invocation.file }),
            })
            .pipe(
              Effect.map((log) =>
                invocation.json
                  ? logJson(log)
                  : renderLog(log, {
                      color: terminal.outColor,
                      full: invocation.full,
                      ...(invocation.file === undefined ? {} : { file: invocation.file }),
                    }),
              ),
            )
        : invocation._tag === "Status"
          ? notebook
              .status({ path: invocation.path })
              .pipe(
                Effect.map((status) =>
                  invocation.json
                    ? statusJson(status)
                    : renderStatus(status, { color: terminal.outColor }),
                ),
              )
          : invocation._tag === "Diff"
            ? notebook
                .diff({ path: invocation.path, files: invocation.files })
                .pipe(
                  Effect.map((diff) =>
                    invocation.json
                      ? diffJson(diff)
                      : invocation.stat
                        ? renderDiffStat(diff, { color: terminal.outColor })
                        : renderDiff(diff, { color: terminal.outColor }),
                  ),
                )
            : invocation._tag === "Restore" || invocation._tag === "Revert"
              ? (invocation._tag === "Restore"
                  ? notebook.restore({
                      path: invocation.path,
                      generation: invocation.generation,
                      files: invocation.files,
                      force: invocation.force,
                    })
                  : notebook.revert({ path: invocation.path, generation: invocation.generation })
                ).pipe(
                  Effect.map((restored) =>
                    invocation.json
                      ? restoredJson(restored)
                      : renderRestored(restored, invocation._tag),
                  ),
                )
              : notebook
                  .show({
                    path: invocation.path,
                    generation: invocation.generation,
                    files: invocation.files,
                  })
                  .pipe(
                    Effect.map((shown) =>
                      invocation.json
                        ? shownJson(shown)
                        : renderShown(shown, { color: terminal.outColor }),
                    ),
                  );
    const command = invocation._tag.toLowerCase();
    const result = yield* defectsAsInternal(answer, command, diagnosticId).pipe(
      Effect.either,
      Effect.annotateLogs("diagnosticId", diagnosticId),
    );
    if (result._tag === "Right") {
      terminal.out(result.right);
      return exitCodes.ok;
    }
    if (invocation.json)
      terminal.out(cliErrorJson(result.left, diagnosticId, invocation.config.pathSets, redaction));
    else {
      terminal.err(
        renderCliError(
          result.left,
          diagnosticId,
          invocation.config.pathSets,
          { color: terminal.errColor },
          redaction,
        ),
      );
      terminal.err(workspaceHint(result.left, invocation.config.workspace));
    }
    return exitCodes.reported;
  }).pipe(Effect.annotateLogs({ module: "cli" }));
