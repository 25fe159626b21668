"""psycopg 3 against one registration, made once by its text with $1
(issue 47, "Statements matched by shape"): integers bound with the type
psycopg picks for their size (smallint, integer, bigint), server-side
prepared from the first execution, and the same statement with its values
in the text (a client-side binding cursor, as Rails sends statements
without prepared statements). Every result is compared with the statement
where pg_memo serves nothing, across writes by another connection. Prints
"checked=N mismatches=M errors=E" and the first mismatches.

usage: psycopg_shapes.py APP_CONNINFO TRUTH_CONNINFO WRITER_CONNINFO
"""
import sys

import psycopg
from psycopg.types.numeric import Int8

from comparison import Comparison

app_conninfo, truth_conninfo, writer_conninfo = sys.argv[1:4]
prepared = psycopg.connect(app_conninfo, autocommit=True, prepare_threshold=0)
literal = psycopg.connect(app_conninfo, autocommit=True, cursor_factory=psycopg.ClientCursor)
truth = psycopg.connect(truth_conninfo, autocommit=True)
truth.execute("SET pg_memo.serve_statements = off")
writer = psycopg.connect(writer_conninfo, autocommit=True)

SHAPE = "SELECT id, title FROM cl_items WHERE team = %s ORDER BY id DESC LIMIT 5"
comparison = Comparison()

for i in range(40):
    # A small int binds as smallint, 40001 as integer; Int8 binds a team
    # that has rows as bigint, as a driver that types every integer so does.
    for team in (i % 4, 40000 + i % 2, Int8((i + 1) % 4)):
        for what, conn in (("prepared", prepared), ("literal", literal)):
            comparison.compare(f"{what} team={team}", lambda: conn.execute(SHAPE, (team,)).fetchall(),
                               lambda: truth.execute(SHAPE, (team,)).fetchall())
    if i % 5 == 4:
        writer.execute("UPDATE cl_items SET title = title || '+' WHERE id = (SELECT max(id) FROM cl_items "
                       "WHERE team = %s)", (i % 4,))
    if i % 7 == 6:
        writer.execute("INSERT INTO cl_items (team, title) VALUES (%s, 'shaped')", (40000 + i % 2,))

comparison.report()
