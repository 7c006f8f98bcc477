/**
 * Redaction of diagnostic text (SPEC §2.4), as defence in depth: whatever reaches a
 * result, a log line or stderr passes through {@link redact} so that credentials,
 * object-store keys, private-state paths and internal ids never leave the process.
 */

/** What to scrub besides the built-in patterns. */
export interface RedactOptions {
  /**
   * Private-state paths (the private root, state files) to replace with `<private>`.
   * Entries without a path separator (`/` or `\`) are ignored: they are not paths, and
   * scrubbing a bare word would mangle ordinary text.
   */
  readonly privatePaths?: ReadonlyArray<string>;
  /**
   * Exact secret strings (e.g. the AWS secret access key, a session token) to replace
   * with `<secret>`. Values shorter than {@link minSecretLength} characters are
   * ignored: they are not credentials, and scrubbing them would shred every message.
   */
  readonly secretValues?: ReadonlyArray<string>;
}

/** The shortest secret value {@link redact} scrubs. */
export const minSecretLength = 8;

/** The tokens redaction leaves in place of what it removed. */
export const redactionTokens = {
  secret: "<secret>",
  privatePath: "<private>",
  objectKey: "<object-key>",
  awsAccessKeyId: "<aws-key-id>",
  hex: "<hex>",
  uuid: "<id>",
  userInfo: "***",
} as const;

// A character that may belong to an object key or URL: not white space, quotes,
// brackets or separating punctuation, so the surrounding prose survives.
const keyChar = "[^\\s\"'`()<>\\[\\]{},;]";
const keyEnd = "(?=$|[\\s\"'`()<>\\[\\]{},;.:!?])";

// A match may only start where a run of key characters starts. This matches exactly
// what the bare pattern would (a later start inside the same run could only match a
// suffix of the run's match), but keeps the search linear: without it, every position
// of a long run of key characters rescans the run (a 100,000-character tool name took
// 50 s to redact).
const runStart = `(?<!${keyChar})`;

// Replacements in order; each replacement token contains none of its own pattern's
// characters in a matchable arrangement, so applying a rule to its output is a no-op.
// scheme://user:pass@host → scheme://***@host (userinfo has no `/`, `@` or space). The
// scheme is checked behind the match, only where `://` precedes it, for the same reason.
const userInfoRule: readonly [RegExp, string] = [
  /(?<=[a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]+@/giu,
  `${redactionTokens.userInfo}@`,
];
const awsAccessKeyIdRule: readonly [RegExp, string] = [
  /(?:AKIA|ASIA)[A-Z0-9]{16}/gu,
  redactionTokens.awsAccessKeyId,
];

const patterns: ReadonlyArray<readonly [RegExp, string]> = [
  userInfoRule,
  [
    new RegExp(`${runStart}${keyChar}*packs/(?:checkpoints|increments)/${keyChar}+`, "gu"),
    redactionTokens.objectKey,
  ],
  [
    new RegExp(`${runStart}${keyChar}*probe/[0-9a-fA-F-]{36}${keyChar}*`, "gu"),
    redactionTokens.objectKey,
  ],
  [new RegExp(`${runStart}${keyChar}*/current${keyEnd}`, "gu"), redactionTokens.objectKey],
  awsAccessKeyIdRule,
  // 40-hex (SHA-1, git ids), 64-hex (SHA-256) and any longer run of them
  [/[0-9a-fA-F]{40,}/gu, redactionTokens.hex],
  // UUIDs: publication and probe ids are internal object ids too
  [
    /[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/gu,
    redactionTokens.uuid,
  ],
];

// Redaction is iterated to a fixed point so that a match formed by an earlier removal
// is scrubbed too; every rule shortens or keeps the text stable on realistic input, and
// the bound keeps adversarial input (a secret spelling a token) from looping.
const maxPasses = 8;

/**
 * Scrubs `text`: exact secret values, private paths, URL user-info, object-store keys
 * (`…packs/checkpoints/…`, `…packs/increments/…`, `…probe/<uuid>`, `…/current`), AWS
 * access key ids (`AKIA`/`ASIA` + 16 `[A-Z0-9]`, even inside a word), hex runs of 40
 * or more characters and UUIDs. Pure and idempotent (`redact(redact(t)) === redact(t)`); secrets
 * never survive, even embedded in other text. Longer secrets and paths are replaced first.
 */
export const redact = (text: string, options: RedactOptions = {}): string => {
  const literals: ReadonlyArray<readonly [string, string]> = [
    ...scrubbedSecrets(options.secretValues ?? []).map(
      (value) => [value, redactionTokens.secret] as const,
    ),
    ...longestFirst((options.privatePaths ?? []).filter(isPathLike)).map(
      (value) => [value, redactionTokens.privatePath] as const,
    ),
  ];
  let current = text;
  for (let pass = 0; pass < maxPasses; pass++) {
    let next = current;
    for (const [literal, token] of literals) next = next.split(literal).join(token);
    for (const [pattern, replacement] of patterns) next = next.replace(pattern, replacement);
    if (next === current) return current;
    current = next;
  }
  return current;
};

// `name=value` where the name says the value is a credential: a query parameter
// (`?token=…`, `&X-Amz-Signature=…`) or an option (`--api-key=…`). The value runs to
// white space or the next parameter.
const secretParameter =
  /((?:^|[\s?&;])-{0,2}[\w.-]*?(?:token|secret|passw(?:or)?d|pwd|api[_-]?key|access[_-]?key|signature|credential)[\w.-]*=)[^\s&#]+/giu;

// `user:password@` whose password holds a `/` (an AWS secret key written unencoded),
// which {@link userInfoRule} leaves: after the colon anything but white space and `@`
// belongs to the password (at worst a `host:port/path@…` is scrubbed too).
const passwordUserInfoRule: readonly [RegExp, string] = [
  /(?<=[a-z][a-z0-9+.-]*:\/\/)[^\s/?#@:]+:[^\s@]*@/giu,
  `${redactionTokens.userInfo}@`,
];

/**
 * Scrubs only credentials from `text`, for output that must otherwise stay as written
 * (a command line shown back to its owner): the exact `secretValues` (as {@link redact}
 * does), URL user-info (`scheme://user:pass@host` → `scheme://***@host`), AWS access key
 * ids, and the values of parameters whose names say they are credentials (`token=`,
 * `secret=`, `password=`, `api_key=`, `signature=`…, as query parameters or `--options`).
 * Paths, ids and hex runs are left alone, unlike {@link redact}. Pure and idempotent.
 */
export const redactCredentials = (
  text: string,
  secretValues: ReadonlyArray<string> = [],
): string => {
  let current = text;
  for (const value of scrubbedSecrets(secretValues))
    current = current.split(value).join(redactionTokens.secret);
  for (const [pattern, replacement] of [passwordUserInfoRule, userInfoRule, awsAccessKeyIdRule])
    current = current.replace(pattern, replacement);
  return current.replace(secretParameter, `$1${redactionTokens.secret}`);
};

const isPathLike = (value: string): boolean => value.length > 1 && /[/\\]/u.test(value);

/** The secret values long enough to be scrubbed (shorter ones would match anywhere), longest first. */
const scrubbedSecrets = (values: ReadonlyArray<string>): ReadonlyArray<string> =>
  longestFirst(values.filter((value) => value.length >= minSecretLength));

const longestFirst = (values: ReadonlyArray<string>): ReadonlyArray<string> =>
  [...new Set(values)].sort((a, b) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0));
