"""A Python application calling the memo functions with psycopg 3's default
parameter binding: a list of ints goes as smallint[] (or integer[],
bigint[]), Decimals as numeric[], floats as double precision[], bools as
boolean[]; server-side prepared after five executions. Across writes by
another connection, every result is compared with the direct query.
Prints one line: "checked=N mismatches=M errors=E", then the first
mismatches. Also calls the cache name dp.same_key with 7, '7' and
Decimal(7): one key (the test checks its hits).

usage: psycopg_memo_calls.py APP_CONNINFO WRITER_CONNINFO
"""
import datetime
import decimal
import sys

import psycopg

from comparison import Comparison

app_conninfo, writer_conninfo = sys.argv[1:3]
app = psycopg.connect(app_conninfo, autocommit=True)
writer = psycopg.connect(writer_conninfo, autocommit=True)

COUNT = "SELECT memo.count(%s, %s, %s)"
COUNT_FRESH = "SELECT memo.count(%s, %s, %s, max_staleness => %s, error_ttl => %s)"
PAGE = "SELECT id, title FROM memo.list(%s, %s, %s) AS t(id int, title text)"

# (what, memoized query, its parameters as psycopg gets them, the direct query)
def calls(team):
    return [
        ("int", "SELECT * FROM dp_items WHERE team = $1", [team],
         ("SELECT count(*) FROM dp_items WHERE team = %s", (team,))),
        ("numeric", "SELECT * FROM dp_items WHERE weight > $1", [decimal.Decimal(team) / 2],
         ("SELECT count(*) FROM dp_items WHERE weight > %s", (decimal.Decimal(team) / 2,))),
        ("float", "SELECT * FROM dp_items WHERE weight > $1::float8", [team / 3],
         ("SELECT count(*) FROM dp_items WHERE weight > %s::float8", (team / 3,))),
        ("bool", "SELECT * FROM dp_items WHERE done = $1", [team % 2 == 0],
         ("SELECT count(*) FROM dp_items WHERE done = %s", (team % 2 == 0,))),
        ("two", "SELECT * FROM dp_items WHERE team = $1 AND id > $2", [team, 10 * team],
         ("SELECT count(*) FROM dp_items WHERE team = %s AND id > %s", (team, 10 * team))),
    ]


comparison = Comparison()
compare = comparison.compare

for i in range(40):
    team = i % 4
    for what, query, params, (direct, direct_params) in calls(team):
        compare(what, lambda: app.execute(COUNT, ("dp." + what, query, params)).fetchall(),
                lambda: app.execute(direct, direct_params).fetchall())
    compare("fresh", lambda: app.execute(COUNT_FRESH, ("dp.fresh", "SELECT * FROM dp_items WHERE team = $1",
                                                       [team], datetime.timedelta(0), None)).fetchall(),
            lambda: app.execute("SELECT count(*) FROM dp_items WHERE team = %s", (team,)).fetchall())
    compare("page", lambda: app.execute(PAGE, ("dp.page", "SELECT id, title FROM dp_items WHERE team = $1 "
                                               "ORDER BY id LIMIT $2", [team, 5])).fetchall(),
            lambda: app.execute("SELECT id, title FROM dp_items WHERE team = %s ORDER BY id LIMIT %s",
                                (team, 5)).fetchall())
    if i % 5 == 4:
        writer.execute("UPDATE dp_items SET title = title || '+', done = NOT done WHERE id = %s", (team + 1,))
    if i % 7 == 6:
        writer.execute("INSERT INTO dp_items (team, title, weight, done) VALUES (%s, 'added', 1.5, true)", (team,))

for value in (7, "7", decimal.Decimal(7)):
    app.execute(COUNT, ("dp.same_key", "SELECT * FROM dp_items WHERE team = $1::int", [value]))

comparison.report()
