// A Fastify logger that keeps its JSON lines, for asserting what grudge logged.
export function captureLog(): {
  lines: Record<string, unknown>[]
  logger: { level: string; stream: { write(s: string): void } }
} {
  const lines: Record<string, unknown>[] = []
  return {
    lines,
    logger: { level: 'warn', stream: { write: (s: string) => lines.push(JSON.parse(s) as Record<string, unknown>) } },
  }
}
