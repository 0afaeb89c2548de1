/** True for a `postgres://` or `postgresql://` URL: a PostgreSQL journal, not a Brain server. */
export function isPostgresUrl(url: unknown): url is string {
  return typeof url === "string" && /^postgres(ql)?:\/\//i.test(url);
}
