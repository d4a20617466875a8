// The example API's user directory: a real database (SQLite through better-sqlite3 by
// default, PostgreSQL when DATABASE_URL is a postgres:// URL), seeded at start, with a
// Bloom filter of every username in front of it so that "is this name taken?" for a name
// that surely is not taken never reaches the database.
import Database from 'better-sqlite3'
import { BloomFilter } from '../../src/index.js'

/** The user directory the example servers use. */
export interface UserDirectory {
  /** `sqlite` or `postgres`. */
  readonly kind: 'sqlite' | 'postgres'
  /** Number of seeded users. */
  readonly size: number
  /** Bloom filter of every username (1% false positives at the seeded size). */
  readonly bloom: BloomFilter
  /** Whether the username exists (one database query). */
  exists(username: string): Promise<boolean>
  /** Whether the password is the user's (one database query). */
  checkPassword(username: string, password: string): Promise<boolean>
  /** Database queries made so far. */
  readonly queries: number
  close(): Promise<void>
}

/** Seeded usernames: `user0` … `user<n−1>` plus a few real-looking names. */
export function seedNames(n: number): string[] {
  const names = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi', 'ivan', 'judy']
  for (let i = 0; i < n; i++) names.push(`user${i}`)
  return names
}

/** Every seeded user's password is `<username>-secret` (an example, not a password policy). */
export function passwordOf(username: string): string {
  return `${username}-secret`
}

/**
 * Open and seed the user directory.
 * @param databaseUrl `postgres://…` for PostgreSQL (table `grudge_example_users`, created if
 * missing); anything else (or undefined) for an in-memory SQLite database
 * @param users number of generated users to seed (default 10,000)
 */
export async function openUsers(databaseUrl?: string, users = 10_000): Promise<UserDirectory> {
  const names = seedNames(users)
  const bloom = BloomFilter.byAccuracy({ capacity: names.length, errorRate: 0.01 })
  for (const n of names) bloom.add(n)
  if (databaseUrl !== undefined && /^postgres(ql)?:\/\//.test(databaseUrl))
    return openPostgres(databaseUrl, names, bloom)
  const db = new Database(':memory:')
  db.exec('CREATE TABLE users (username TEXT PRIMARY KEY, password TEXT NOT NULL)')
  const insert = db.prepare('INSERT INTO users (username, password) VALUES (?, ?)')
  db.transaction((list: string[]) => {
    for (const n of list) insert.run(n, passwordOf(n))
  })(names)
  const existsStmt = db.prepare('SELECT 1 FROM users WHERE username = ?')
  const passwordStmt = db.prepare('SELECT password FROM users WHERE username = ?')
  let queries = 0
  return {
    kind: 'sqlite',
    size: names.length,
    bloom,
    get queries() {
      return queries
    },
    // better-sqlite3 is synchronous; the directory's API is async for PostgreSQL
    exists(username) {
      queries++
      return Promise.resolve(existsStmt.get(username) !== undefined)
    },
    checkPassword(username, password) {
      queries++
      const row = passwordStmt.get(username) as { password: string } | undefined
      return Promise.resolve(row !== undefined && row.password === password)
    },
    close() {
      db.close()
      return Promise.resolve()
    },
  }
}

async function openPostgres(url: string, names: string[], bloom: BloomFilter): Promise<UserDirectory> {
  const { default: pg } = await import('pg')
  const pool = new pg.Pool({ connectionString: url, max: 10 })
  await pool.query(
    'CREATE TABLE IF NOT EXISTS grudge_example_users (username TEXT PRIMARY KEY, password TEXT NOT NULL)',
  )
  for (let i = 0; i < names.length; i += 1000) {
    const chunk = names.slice(i, i + 1000)
    await pool.query(
      'INSERT INTO grudge_example_users (username, password) SELECT * FROM UNNEST($1::text[], $2::text[]) ON CONFLICT (username) DO NOTHING',
      [chunk, chunk.map(passwordOf)],
    )
  }
  let queries = 0
  return {
    kind: 'postgres',
    size: names.length,
    bloom,
    get queries() {
      return queries
    },
    async exists(username) {
      queries++
      const r = await pool.query('SELECT 1 FROM grudge_example_users WHERE username = $1', [username])
      return (r.rowCount ?? 0) > 0
    },
    async checkPassword(username, password) {
      queries++
      const r = await pool.query<{ password: string }>(
        'SELECT password FROM grudge_example_users WHERE username = $1',
        [username],
      )
      return r.rows.length > 0 && r.rows[0].password === password
    },
    async close() {
      await pool.end()
    },
  }
}
