/**
 * A connection URL without its password, for log lines and error messages. Both callers
 * get URLs that already passed config validation, so the fallback names only the scheme.
 */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return `${url.split(':')[0] ?? 'unknown'}://(unparseable URL)`;
  }
}
