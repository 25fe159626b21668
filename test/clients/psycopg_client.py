"""A Python application, unchanged, against registered statements.

Runs the page query of cl_items as an application does with psycopg 3
(server-side prepared after five executions, unless through a transaction
pooler) and as SQLAlchemy Core generates it, across writes by another
connection, and compares every result with the same statement run where
pg_memo serves nothing (pg_memo.serve_statements = off). Prints one line:
"checked=N mismatches=M errors=E", and the first mismatches.

usage: psycopg_client.py APP_CONNINFO TRUTH_CONNINFO WRITER_CONNINFO {direct|pooled}
(the truth is read directly: a session setting through a transaction pooler
would reach other clients)
"""
import sys

import psycopg
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from comparison import Comparison

app_conninfo, truth_conninfo, writer_conninfo, mode = sys.argv[1:5]
# psycopg's default: server-side prepared after five executions; a
# transaction pooler (PgBouncer 1.18) cannot keep prepared statements.
prepare_threshold = 5 if mode == "direct" else None

app = psycopg.connect(app_conninfo, autocommit=True, prepare_threshold=prepare_threshold)
truth = psycopg.connect(truth_conninfo, autocommit=True, prepare_threshold=prepare_threshold)
truth.execute("SET pg_memo.serve_statements = off")
writer = psycopg.connect(writer_conninfo, autocommit=True)

PAGE = "SELECT id, title FROM cl_items WHERE team = %s ORDER BY id LIMIT %s"
items = sa.table("cl_items", sa.column("id"), sa.column("title"), sa.column("team"))
orm_page = (sa.select(items.c.id, items.c.title)
            .where(items.c.team == sa.bindparam("team"))
            .order_by(items.c.id).limit(5))
ORM_SQL = str(orm_page.compile(dialect=postgresql.dialect(paramstyle="pyformat")))

comparison = Comparison()


def compare(what, sql, params):
    comparison.compare(f"{what} {params}", lambda: app.execute(sql, params).fetchall(),
                       lambda: truth.execute(sql, params).fetchall())


for i in range(60):
    team = i % 4
    compare("page", PAGE, (team, 5))
    compare("orm", ORM_SQL, {"team": team, "param_1": 5})
    if i % 5 == 4:
        writer.execute("UPDATE cl_items SET title = title || '+' WHERE id = %s", (team + 4 * (i % 7) + 1,))
    if i % 9 == 8:
        writer.execute("INSERT INTO cl_items (team, title) VALUES (%s, 'added')", (team,))

comparison.report()
