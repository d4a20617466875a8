// Loopback servers for the Express compat tests, for Express 5 (`express`) and 4 (`express4`).
import type { Test } from 'tap'
import express from 'express'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import { request } from 'undici'

export const express4 = createRequire(import.meta.url)('express4') as typeof express

/** Both majors, each as a label and its factory. */
export const EXPRESS_VERSIONS = [
  ['express 5', express],
  ['express 4', express4],
] as const

export interface Hit {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

export async function serve(t: Test, app: express.Express): Promise<string> {
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s))
  })
  const { port } = server.address() as AddressInfo
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  )
  return `http://127.0.0.1:${port}`
}

export async function hit(url: string, headers: Record<string, string> = {}): Promise<Hit> {
  const r = await request(url, { headers })
  return { status: r.statusCode, headers: r.headers, body: await r.body.text() }
}
