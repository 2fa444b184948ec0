import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { makeTempDir } from './processes'

// An nginx-proxy-manager database as its own migrations leave it
// (backend/migrations/*.js of NginxProxyManager/nginx-proxy-manager, up to
// 20260131163528_trust_forwarded_proto): the tables of the initial schema with
// every later column added and renamed (proxy_host.forward_ip -> forward_host,
// stream.forward_ip -> forwarding_host, access_list.satify_any -> satisfy_any),
// in the SQL knex's SQLite dialect writes (increments: integer primary key
// autoincrement, string: varchar(255), json: json, dateTime: datetime).

const SCHEMA = `
CREATE TABLE knex_migrations (id integer not null primary key autoincrement, name varchar(255), batch integer, migration_time datetime);
CREATE TABLE knex_migrations_lock ("index" integer not null primary key autoincrement, is_locked integer);
CREATE TABLE auth (id integer not null primary key autoincrement, created_on datetime not null, modified_on datetime not null, user_id integer not null, type varchar(30) not null, secret varchar(255) not null, meta json not null, is_deleted integer not null default '0');
CREATE TABLE user (id integer not null primary key autoincrement, created_on datetime not null, modified_on datetime not null, is_deleted integer not null default '0', is_disabled integer not null default '0', email varchar(255) not null, name varchar(255) not null, nickname varchar(255) not null, avatar varchar(255) not null, roles json not null);
CREATE TABLE user_permission (id integer not null primary key autoincrement, created_on datetime not null, modified_on datetime not null, user_id integer not null, visibility varchar(255) not null, proxy_hosts varchar(255) not null, redirection_hosts varchar(255) not null, dead_hosts varchar(255) not null, streams varchar(255) not null, access_lists varchar(255) not null, certificates varchar(255) not null);
CREATE UNIQUE INDEX user_permission_user_id_unique on user_permission (user_id);
CREATE TABLE proxy_host (id integer not null primary key autoincrement, created_on datetime not null, modified_on datetime not null, owner_user_id integer not null, is_deleted integer not null default '0', domain_names json not null, forward_host varchar(255) not null, forward_port integer not null, access_list_id integer not null default '0', certificate_id integer not null default '0', ssl_forced integer not null default '0', caching_enabled integer not null default '0', block_exploits integer not null default '0', advanced_config text not null default '', meta json not null, allow_websocket_upgrade integer not null default '0', http2_support integer not null default '0', forward_scheme varchar(255) not null default 'http', enabled integer not null default '1', locations json, hsts_enabled integer not null default '0', hsts_subdomains integer not null default '0', trust_forwarded_proto tinyint not null default '0');
CREATE TABLE redirection_host (id integer not null primary key autoincrement, created_on datetime not null, modified_on datetime not null, owner_user_id integer not null, is_deleted integer not null default '0', domain_names json not null, forward_domain_name varchar(255) not null, preserve_path integer not null default '0', certificate_id integer not null default '0', ssl_forced integer not null default '0', block_exploits integer not null default '0', advanced_config text not null default '', meta json not null, http2_support integer not null default '0', enabled integer not null default '1', hsts_enabled integer not null default '0', hsts_subdomains integer not null default '0', forward_scheme varchar(255) not null default 'auto', forward_http_code integer not null default '302');
CREATE TABLE dead_host (id integer not null primary key autoincrement, created_on datetime not null, modified_on datetime not null, owner_user_id integer not null, is_deleted integer not null default '0', domain_names json not null, certificate_id integer not null default '0', ssl_forced integer not null default '0', advanced_config text not null default '', meta json not null, http2_support integer not null default '0', enabled integer not null default '1', hsts_enabled integer not null default '0', hsts_subdomains integer not null default '0');
CREATE TABLE stream (id integer not null primary key autoincrement, created_on datetime not null, modified_on datetime not null, owner_user_id integer not null, is_deleted integer not null default '0', incoming_port integer not null, forwarding_host varchar(255) not null, forwarding_port integer not null, tcp_forwarding integer not null default '0', udp_forwarding integer not null default '0', meta json not null, enabled integer not null default '1', certificate_id integer not null default '0');
CREATE TABLE access_list (id integer not null primary key autoincrement, created_on datetime not null, modified_on datetime not null, owner_user_id integer not null, is_deleted integer not null default '0', name varchar(255) not null, meta json not null, satisfy_any integer not null default '0', pass_auth integer not null default '1');
CREATE TABLE certificate (id integer not null primary key autoincrement, created_on datetime not null, modified_on datetime not null, owner_user_id integer not null, is_deleted integer not null default '0', provider varchar(255) not null, nice_name varchar(255) not null default '', domain_names json not null, expires_on datetime not null, meta json not null);
CREATE TABLE access_list_auth (id integer not null primary key autoincrement, created_on datetime not null, modified_on datetime not null, access_list_id integer not null, username varchar(255) not null, password varchar(255) not null, meta json not null);
CREATE TABLE access_list_client (id integer not null primary key autoincrement, created_on datetime not null, modified_on datetime not null, access_list_id integer not null, address varchar(255) not null, directive varchar(255) not null, meta json not null);
CREATE TABLE audit_log (id integer not null primary key autoincrement, created_on datetime not null, modified_on datetime not null, user_id integer not null, object_type varchar(255) not null default '', object_id integer not null default '0', action varchar(255) not null, meta json not null);
CREATE TABLE setting (id varchar(255) not null, name varchar(100) not null, description varchar(255) not null, value varchar(255) not null, meta json not null, primary key (id));
`

const MIGRATIONS = [
  '20180618015850_initial.js',
  '20180929054513_websockets.js',
  '20181019052346_forward_host.js',
  '20181113041458_http2_support.js',
  '20181213013211_forward_scheme.js',
  '20190104035154_disabled.js',
  '20190215115310_customlocations.js',
  '20190218060101_hsts.js',
  '20190227065017_settings.js',
  '20200410143839_access_list_client.js',
  '20200410143840_access_list_client_fix.js',
  '20201014143841_pass_auth.js',
  '20210210154702_redirection_scheme.js',
  '20210210154703_redirection_status_code.js',
  '20210423103500_stream_domain.js',
  '20211108145214_regenerate_default_host.js',
  '20240427161436_stream_ssl.js',
  '20251111090000_redirect_auto_scheme.js',
  '20260131163528_trust_forwarded_proto.js',
]

type Row = Record<string, string | number | null | object>

/** One row per table name: objects become JSON text, as knex stores json columns. */
export interface NpmRows {
  [table: string]: Row[]
}

/**
 * Writes a database file with the schema above and these rows, then runs
 * `extraSql` (to craft a file that is not quite nginx-proxy-manager's); returns its path.
 */
export async function buildNpmDatabase(rows: NpmRows, extraSql: string[] = []): Promise<string> {
  const file = join(makeTempDir('npm-db-'), 'database.sqlite')
  const client = createClient({ url: `file:${file}` })
  try {
    await client.executeMultiple(SCHEMA)
    await client.batch(
      MIGRATIONS.map((name) => ({
        sql: 'INSERT INTO knex_migrations (name, batch, migration_time) VALUES (?, 1, ?)',
        args: [name, '2026-01-31 16:35:28'],
      })),
      'write',
    )
    const stamp = { created_on: '2026-01-01 00:00:00', modified_on: '2026-01-01 00:00:00' }
    for (const [table, list] of Object.entries(rows)) {
      for (const row of list) {
        const full: Row = { ...(table === 'setting' ? {} : stamp), ...row }
        const cols = Object.keys(full)
        await client.execute({
          sql: `INSERT INTO ${table} (${cols.map((c) => `"${c}"`).join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`,
          args: cols.map((c) => {
            const v = full[c]
            return v !== null && typeof v === 'object' ? JSON.stringify(v) : (v as string | number | null)
          }),
        })
      }
    }
    for (const sql of extraSql) await client.execute(sql)
  } finally {
    client.close()
  }
  return file
}
