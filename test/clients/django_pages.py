"""A Django application, unchanged, against pg_memo (issue 47; test/t/025).

Django's ORM (3.2, with psycopg2, which puts every value in the text of
the statement) pages through one team's employees with its Paginator: each
request runs the COUNT(*) the Paginator needs and the page's query
(LIMIT 20 on the first page, LIMIT 20 OFFSET n on the others). About one
request in twenty is a write through the ORM, alternating a salary raise
(QuerySet.update) and a move to another team (Model.save), on a row of
the page just read, so that a page or a count served stale would show.
Every request runs twice: through the application's connection (served by
pg_memo: by a registration of its shape, or admitted automatically) and
through a connection where pg_memo serves nothing
(pg_memo.serve_statements = off); the two results must be equal.

usage: django_pages.py APP_CONNINFO TRUTH_CONNINFO TABLE REQUESTS
       django_pages.py APP_CONNINFO TRUTH_CONNINFO TABLE statements

With a number of requests, prints "requests=N writes=W checked=N
mismatches=M errors=E" and the first mismatches. With "statements",
runs one first page and one second page, and prints for each SELECT
Django sent, "statement<TAB>its text with $1, $2... for its values<TAB>its
text as sent": the statements a DBA registers by shape. The truth is read
directly (a session setting through a transaction pooler would reach
other clients).
"""
import random
import re
import sys

import django
from django.conf import settings
from psycopg2.extensions import parse_dsn

app_conninfo, truth_conninfo, table, mode = sys.argv[1:5]


def database(conninfo):
    params = parse_dsn(conninfo)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": params.pop("dbname", "postgres"),
        "USER": params.pop("user", ""),
        "HOST": params.pop("host", ""),
        "PORT": params.pop("port", ""),
        "OPTIONS": params,
        # As Django's documentation says for PgBouncer in transaction mode.
        "DISABLE_SERVER_SIDE_CURSORS": True,
    }


settings.configure(DATABASES={"default": database(app_conninfo), "truth": database(truth_conninfo)},
                   INSTALLED_APPS=[], USE_TZ=False, DEBUG=False)
django.setup()

from django.core.paginator import Paginator  # noqa: E402 (after settings)
from django.db import Error, connections, models  # noqa: E402
from django.db.backends.signals import connection_created  # noqa: E402
from django.db.models import F  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402


class Employee(models.Model):
    id = models.BigIntegerField(primary_key=True)
    team_id = models.BigIntegerField()
    name = models.TextField()
    salary = models.IntegerField()

    class Meta:
        app_label = "pages"
        managed = False
        db_table = table


def serving_off(sender, connection, **kwargs):
    if connection.alias == "truth":
        with connection.cursor() as cursor:
            cursor.execute("SET pg_memo.serve_statements = off")


connection_created.connect(serving_off)


def request(alias, team, number):
    """One page of a team's employees, as a view with a Paginator shows it."""
    paginator = Paginator(Employee.objects.using(alias).filter(team_id=team).order_by("id"), 20)
    page = paginator.get_page(number)
    return (paginator.count, page.number,
            [(e.id, e.team_id, e.name, e.salary) for e in page.object_list])


def run(fn):
    try:
        return fn()
    except Error as e:
        return ("error", type(e).__name__, str(e).strip())


if mode == "statements":
    with CaptureQueriesContext(connections["default"]) as captured:
        request("default", 1, 1)
        request("default", 1, 2)
    seen = set()
    for query in captured.captured_queries:
        sql = query["sql"]
        if not sql.startswith("SELECT") or sql in seen:
            continue
        seen.add(sql)
        numbers = iter(range(1, 100))
        shape = re.sub(r'(?<![\w$."])\d+(?![\w."])', lambda m: f"${next(numbers)}", sql)
        print(f"statement\t{shape}\t{sql}")
    sys.exit(0)

with connections["truth"].cursor() as cursor:
    cursor.execute("SHOW pg_memo.serve_statements")
    assert cursor.fetchone()[0] == "off", "the truth's connection must have serving off"

rng = random.Random(25)
checked = mismatches = errors = writes = 0
shown = []
for i in range(int(mode)):
    team, number = rng.randrange(4), rng.randrange(1, 4)
    got = run(lambda: request("default", team, number))
    want = run(lambda: request("truth", team, number))
    checked += 1
    if got != want:
        mismatches += 1
        if len(shown) < 3:
            shown.append(f"request {i} team={team} page={number}: got {got!r} want {want!r}")
    if got and got[0] == "error":
        errors += 1
    if i % 20 == 19 and want and want[0] != "error" and want[2]:
        # A write on a row of the page just read: a served page that is
        # not invalidated at the commit would differ from the truth's.
        victim = rng.choice(want[2])[0]
        writes += 1
        if writes % 2:
            Employee.objects.filter(pk=victim).update(salary=F("salary") + 7)
        else:
            employee = Employee.objects.get(pk=victim)
            employee.team_id = (employee.team_id + 1 + rng.randrange(3)) % 4
            employee.save(update_fields=["team_id"])

print(f"requests={checked} writes={writes} checked={checked} mismatches={mismatches} errors={errors}")
for line in shown:
    print(line)
