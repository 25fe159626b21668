"""Tenants behind row level security, checked as an attacker would.

Readers interleave tenants on shared connections, as a transaction pooler
does: each transaction sets its role and its claims with SET LOCAL (as
PostgREST does), reads through pg_memo (memo.list, memo.count, or a
registered statement sent unchanged), then reads the same statement with
pg_memo serving nothing, in the same transaction. A writer changes rows,
memberships, a policy and a role's memberships meanwhile; every change
bumps tk_commits in its own transaction.

Two checks per read:
- leak: a row of another tenant where the policy pins rows to a tenant by
  a column that never changes (org_id to the app.org_id setting, owner_id
  to the claims' sub): always checked, whatever committed meanwhile;
- exact: the read equals the uncached read, when no change committed
  between the two (tk_commits unchanged); a stale or leaked row of any
  policy shape shows here.

usage: tenant_checker.py setup SUPERUSER_CONNINFO
       tenant_checker.py run POOLED_CONNINFO DIRECT_CONNINFO SUPERUSER_CONNINFO READS SECONDS SEED
(readers log in as tk_authenticator, as PostgREST's authenticator role does,
through PgBouncer in transaction mode and directly; the writer as the
superuser)
Prints "reads=N exact=E checked=C leaks=L mismatches=M errors=X served=S"
and the first problems: checked counts the reads that went through at
least one of the two checks (exact, or a row check of a pinned shape).
"""
import json
import random
import sys
import threading
import time

import psycopg

SHAPES = {
    # name: (role, invariant column or None, the claim it is pinned to)
    "setting": ("tk_web", "org_id", "org"),
    "claims": ("tk_web", "owner_id", "user"),
    "member": ("tk_web", None, None),
    "definer": ("tk_web", None, None),
    "restrict": ("tk_web", "org_id", "org"),
    "forced": ("tk_owner", "owner_id", "user"),
    "view": ("tk_web", "org_id", "org"),
    "role": ("tk_web", None, None),
}
ORGS, USERS, ROWS = 20, 60, 400
LIST = "SELECT id, org_id, owner_id FROM {table} WHERE id > %s ORDER BY id LIMIT 25"
ROWS_COUNTED = "SELECT id FROM {table} WHERE id > %s"
REGISTERED = "SELECT id, org_id, owner_id, body FROM {table} WHERE id > $1 ORDER BY id LIMIT 20"


def table_of(shape):
    return "tk_view_v" if shape == "view" else f"tk_{shape}"


SETUP = f"""
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_memo;
DROP ROLE IF EXISTS tk_web; DROP ROLE IF EXISTS tk_admin; DROP ROLE IF EXISTS tk_owner;
CREATE ROLE tk_web NOLOGIN; CREATE ROLE tk_admin NOLOGIN; CREATE ROLE tk_owner NOLOGIN;
DROP ROLE IF EXISTS tk_authenticator;
CREATE ROLE tk_authenticator LOGIN NOINHERIT;
GRANT tk_web, tk_owner TO tk_authenticator;
CREATE TABLE tk_commits (n bigint NOT NULL);
INSERT INTO tk_commits VALUES (0);
GRANT SELECT ON tk_commits TO tk_authenticator, tk_web, tk_owner;
CREATE FUNCTION tk_uid() RETURNS int LANGUAGE sql STABLE
  AS $$ SELECT (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub')::int $$;
CREATE TABLE tk_members (org_id int NOT NULL, user_id int NOT NULL);
INSERT INTO tk_members SELECT u % {ORGS}, u FROM generate_series(1, {USERS}) u;
CREATE TABLE tk_members_private (org_id int NOT NULL, user_id int NOT NULL);
INSERT INTO tk_members_private SELECT (u + 1) % {ORGS}, u FROM generate_series(1, {USERS}) u;
SELECT memo.watch('tk_members'); SELECT memo.watch('tk_members_private');
GRANT SELECT ON tk_members TO tk_web;
CREATE FUNCTION tk_my_orgs() RETURNS SETOF int LANGUAGE sql STABLE SECURITY DEFINER
  AS $$ SELECT org_id FROM tk_members_private WHERE user_id = tk_uid() $$;
"""

POLICIES = {
    "setting": ["CREATE POLICY p ON tk_setting TO tk_web USING (org_id = current_setting('app.org_id')::int)"],
    "claims": ["CREATE POLICY p ON tk_claims TO tk_web USING (owner_id = tk_uid())"],
    "member": ["CREATE POLICY p ON tk_member TO tk_web USING (EXISTS (SELECT 1 FROM tk_members m "
               "WHERE m.org_id = tk_member.org_id AND m.user_id = tk_uid()))"],
    "definer": ["CREATE POLICY p ON tk_definer TO tk_web USING (org_id IN (SELECT tk_my_orgs()))"],
    "restrict": ["CREATE POLICY p ON tk_restrict TO tk_web USING (org_id = current_setting('app.org_id')::int)",
                 "CREATE POLICY live ON tk_restrict AS RESTRICTIVE TO tk_web USING (NOT archived)"],
    "forced": ["ALTER TABLE tk_forced OWNER TO tk_owner", "ALTER TABLE tk_forced FORCE ROW LEVEL SECURITY",
               "CREATE POLICY p ON tk_forced TO tk_owner USING (owner_id = tk_uid())"],
    "view": ["CREATE POLICY p ON tk_view TO tk_web USING (org_id = current_setting('app.org_id')::int)",
             "CREATE VIEW tk_view_v WITH (security_invoker) AS SELECT * FROM tk_view",
             "GRANT SELECT ON tk_view_v TO tk_web"],
    "role": ["CREATE POLICY web ON tk_role TO tk_web USING (org_id = 1)",
             "CREATE POLICY admin ON tk_role TO tk_admin USING (true)"],
}


def setup(conninfo):
    with psycopg.connect(conninfo, autocommit=True) as c:
        c.execute(SETUP)
        for shape in SHAPES:
            t = f"tk_{shape}"
            c.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, org_id int NOT NULL, owner_id int NOT NULL, "
                      f"archived bool NOT NULL, body text)")
            c.execute(f"INSERT INTO {t} SELECT g, g % {ORGS}, g % {USERS}, g % 7 = 0, 'b' || g "
                      f"FROM generate_series(1, {ROWS}) g")
            c.execute(f"ALTER TABLE {t} ENABLE ROW LEVEL SECURITY")
            c.execute(f"GRANT SELECT ON {t} TO tk_web, tk_admin, tk_owner")
            c.execute(f"SELECT memo.watch('{t}', deltas => true, scope_columns => '{{org_id}}')")
            for statement in POLICIES[shape]:
                c.execute(statement)
            c.execute("SELECT memo.cache_statement(%s, %s)",
                      (REGISTERED.format(table=table_of(shape)), f"tk.registered.{shape}"))


class Totals:
    def __init__(self):
        self.lock = threading.Lock()
        self.reads = self.exact = self.checked = self.leaks = self.mismatches = self.errors = 0
        self.shown = []

    def add(self, **counts):
        with self.lock:
            for k, v in counts.items():
                setattr(self, k, getattr(self, k) + v)

    def show(self, line):
        with self.lock:
            if len(self.shown) < 5:
                self.shown.append(line)


def cached_read(cur, shape, form, after):
    table = table_of(shape)
    if form == "list":
        cur.execute("SELECT * FROM memo.list(%s, %s, %s) AS t(id int, org_id int, owner_id int)",
                    (f"tk.list.{shape}", LIST.format(table=table).replace("%s", "$1"), [str(after)]))
    elif form == "count":
        cur.execute("SELECT memo.count(%s, %s, %s)",
                    (f"tk.count.{shape}", ROWS_COUNTED.format(table=table).replace("%s", "$1"), [str(after)]))
    else:
        cur.execute(REGISTERED.format(table=table).replace("$1", "%s"), (after,))
    return cur.fetchall()


def uncached_read(cur, shape, form, after):
    table = table_of(shape)
    cur.execute("SET LOCAL pg_memo.serve_statements = off")
    if form == "list":
        cur.execute(LIST.format(table=table), (after,))
    elif form == "count":
        cur.execute(f"SELECT count(*) FROM ({ROWS_COUNTED.format(table=table)}) q", (after,))
    else:
        cur.execute(REGISTERED.format(table=table).replace("$1", "%s"), (after,))
    return cur.fetchall()


def rows_checked(shape, form):
    return SHAPES[shape][1] is not None and form != "count"


def leaked_rows(shape, form, rows, user, org):
    role, column, claim = SHAPES[shape]
    if not rows_checked(shape, form):
        return 0
    want = org if claim == "org" else user
    index = 1 if column == "org_id" else 2
    return sum(1 for row in rows if row[index] != want)


def reader(conninfo, pooled, totals, deadline, reads_wanted, seed):
    rng = random.Random(seed)
    conn = psycopg.connect(conninfo, prepare_threshold=None if pooled else 5)
    cur = conn.cursor()
    while time.time() < deadline and totals.reads < reads_wanted:
        shape = rng.choice(list(SHAPES))
        form = rng.choice(["list", "count", "registered"])
        user = rng.randrange(1, USERS + 3)  # a few users without rows or memberships
        org = user % ORGS
        after = rng.choice([0, 0, 0, 100, 250])
        claims = json.dumps({"sub": str(user), "role": SHAPES[shape][0]})
        try:
            with conn.transaction():
                cur.execute("SELECT n FROM tk_commits")
                before = cur.fetchone()[0]
                cur.execute(f"SET LOCAL ROLE {SHAPES[shape][0]}")
                cur.execute("SELECT set_config('request.jwt.claims', %s, true), set_config('app.org_id', %s, true)",
                            (claims, str(org)))
                got = cached_read(cur, shape, form, after)
                want = uncached_read(cur, shape, form, after)
                cur.execute("SELECT n FROM tk_commits")
                unchanged = cur.fetchone()[0] == before
        except psycopg.Error as e:
            totals.add(reads=1, errors=1)
            totals.show(f"error {shape} {form} user={user}: {e.sqlstate} {e}")
            continue
        leaks = leaked_rows(shape, form, got, user, org)
        mismatch = unchanged and got != want
        totals.add(reads=1, exact=1 if unchanged else 0, checked=1 if unchanged or rows_checked(shape, form) else 0,
                   leaks=leaks, mismatches=1 if mismatch else 0)
        if leaks or mismatch:
            totals.show(f"{shape} {form} user={user} org={org} after={after}: got {got[:4]} want {want[:4]}")
    conn.close()


def writer(conninfo, deadline, stop, seed):
    rng = random.Random(seed)
    conn = psycopg.connect(conninfo, autocommit=False)
    cur = conn.cursor()
    next_id = ROWS + 1
    toggles = {"policy": False, "grant": False}
    while time.time() < deadline and not stop.is_set():
        op = rng.random()
        shape = rng.choice(list(SHAPES))
        with conn.transaction():
            if op < 0.45:
                cur.execute(f"INSERT INTO tk_{shape} VALUES (%s, %s, %s, %s, 'w')",
                            (next_id, rng.randrange(ORGS), rng.randrange(USERS), rng.random() < 0.2))
                next_id += 1
            elif op < 0.65:
                cur.execute(f"DELETE FROM tk_{shape} WHERE id = (SELECT id FROM tk_{shape} ORDER BY random() LIMIT 1)")
            elif op < 0.8:
                cur.execute(f"UPDATE tk_{shape} SET body = body || '+', archived = NOT archived "
                            f"WHERE id = %s", (rng.randrange(1, next_id),))
            elif op < 0.9:
                table = rng.choice(["tk_members", "tk_members_private"])
                if rng.random() < 0.5:
                    cur.execute(f"INSERT INTO {table} VALUES (%s, %s)", (rng.randrange(ORGS), rng.randrange(USERS)))
                else:
                    cur.execute(f"DELETE FROM {table} WHERE ctid = (SELECT ctid FROM {table} ORDER BY random() LIMIT 1)")
            elif op < 0.95:
                toggles["policy"] = not toggles["policy"]
                cur.execute("ALTER POLICY live ON tk_restrict USING (NOT archived"
                            + (" AND id % 2 = 0)" if toggles["policy"] else ")"))
            else:
                toggles["grant"] = not toggles["grant"]
                cur.execute("GRANT tk_admin TO tk_web" if toggles["grant"] else "REVOKE tk_admin FROM tk_web")
            cur.execute("UPDATE tk_commits SET n = n + 1")
        time.sleep(rng.uniform(0.002, 0.02))
    conn.close()


def run(pooled, direct, superuser, reads_wanted, seconds, seed):
    totals = Totals()
    deadline = time.time() + seconds
    stop = threading.Event()
    readers = [threading.Thread(target=reader, args=(pooled if i % 2 == 0 else direct, i % 2 == 0, totals,
                                                     deadline, reads_wanted, seed * 100 + i))
               for i in range(6)]
    w = threading.Thread(target=writer, args=(superuser, deadline, stop, seed))
    for t in readers + [w]:
        t.start()
    for t in readers:
        t.join()
    stop.set()
    w.join()
    with psycopg.connect(superuser, autocommit=True) as c:
        served = c.execute("SELECT coalesce(sum(hits), 0) FROM memo.stats WHERE cache_name LIKE 'tk.%'").fetchone()[0]
    print(f"reads={totals.reads} exact={totals.exact} checked={totals.checked} leaks={totals.leaks} "
          f"mismatches={totals.mismatches} "
          f"errors={totals.errors} served={served}")
    for line in totals.shown:
        print(line)


if __name__ == "__main__":
    if sys.argv[1] == "setup":
        setup(sys.argv[2])
    else:
        run(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7]))
