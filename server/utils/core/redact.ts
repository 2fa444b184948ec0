import { getConfig } from './config'
import { getDb, type Executor } from './db'
import { SETTINGS_CATALOGUE, getSetting } from './settings'

// Text written by the proxy or the engine (a /load rejection, an admin API or
// local API error, a line of the proxy's error log) can quote configuration
// values: the cloudflare module prints the token it refuses. Every such text
// passes through redactSecrets (or a redactor built from knownSecrets) before
// it reaches a response, a log line, an audit row or a notification.

export const REDACTED = '[redacted]'
/** Shorter values are not searched for: replacing them would mangle ordinary words. */
const _MIN_SECRET_LENGTH = 4

type SecretSource = (exec: Executor) => Promise<string[]>
const _sources: SecretSource[] = []

/** Stored secrets kept elsewhere (DNS credentials) are listed by their owner. */
export function registerSecretSource(source: SecretSource): void {
  _sources.push(source)
}

/**
 * Pure: a function replacing every occurrence of every secret (raw, JSON-escaped,
 * URL-encoded) with "[redacted]". Built once for many texts (a batch of log lines).
 */
export function makeRedactor(secrets: Iterable<string>): (text: string) => string {
  const forms = new Set<string>()
  for (const s of secrets) {
    if (typeof s !== 'string' || s.length < _MIN_SECRET_LENGTH) continue
    forms.add(s)
    forms.add(JSON.stringify(s).slice(1, -1))
    forms.add(encodeURIComponent(s))
  }
  // Longest first, so a secret containing another is replaced whole.
  const ordered = [...forms].sort((a, b) => b.length - a.length)
  return (text) => {
    let out = text
    for (const f of ordered) if (out.includes(f)) out = out.split(f).join(REDACTED)
    return out
  }
}

/** Pure: every occurrence of every secret (raw, JSON-escaped, URL-encoded) becomes "[redacted]". */
export function redactText(text: string, secrets: Iterable<string>): string {
  return makeRedactor(secrets)(text)
}

/**
 * Pure: a JSON-serialisable value with every secret replaced inside its strings
 * (an event's details on their way to a notification channel). Text that no
 * longer parses after redaction (a secret spanning JSON syntax) is kept as one string.
 */
export function redactJson<T>(value: T, redact: (text: string) => string): T | { redacted: string } {
  const text = JSON.stringify(value)
  const clean = redact(text)
  if (clean === text) return value
  try {
    return JSON.parse(clean) as T
  } catch {
    return { redacted: clean }
  }
}

/** Every secret value the panel knows now: environment, secret settings, registered stores. */
export async function knownSecrets(exec?: Executor): Promise<string[]> {
  const cfg = getConfig()
  const out = [
    cfg.masterKey,
    cfg.databaseAuthToken,
    cfg.adminPassword,
    cfg.lapi.bouncerKey,
    cfg.lapi.panelBouncerKey,
    cfg.lapi.machinePassword,
    cfg.providerAApiToken,
  ]
  let db: Executor | undefined = exec
  try {
    db ??= getDb()
  } catch {
    /* before the database opens: the environment's secrets only */
  }
  if (db) {
    for (const def of SETTINGS_CATALOGUE.filter((d) => d.secret)) {
      try {
        out.push(await getSetting<string>(def.key, db))
      } catch {
        /* unreadable: nothing to hide from it */
      }
    }
    for (const source of _sources) {
      try {
        out.push(...(await source(db)))
      } catch {
        /* idem */
      }
    }
  }
  return out.filter((s): s is string => typeof s === 'string' && s.length > 0)
}

/**
 * Redacts text from the proxy or the engine. Pass the open transaction when there
 * is one: a value being saved (and rejected by the proxy) is only visible there.
 */
export async function redactSecrets(
  text: string,
  opts: { exec?: Executor; extra?: Array<string | null | undefined> } = {},
): Promise<string> {
  if (!text) return text
  const extra = (opts.extra ?? []).filter((s): s is string => !!s)
  return redactText(text, [...(await knownSecrets(opts.exec)), ...extra])
}
