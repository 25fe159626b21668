-- pg_memo_directory 1.2: the listings depend on their scope (pg_memo 1.2's
-- scope columns, docs/consistency.md "Scopes"). A page or count of the
-- subtree of S (path @> ARRAY[S]; the count also reads e.id = S) is made
-- stale only by writes to rows whose old or new path holds S: a team's by
-- writes in that team, the CEO's by every write. Callers change nothing. With pg_memo older than
-- 1.2 the table stays watched as before until both are updated and this
-- is run again.
DO $$
BEGIN
    IF to_regprocedure('memo.watch(regclass, boolean, text[])') IS NOT NULL THEN
        PERFORM memo.watch('directory.employees', true, '{path, id}');
    ELSE
        RAISE WARNING 'pg_memo is older than 1.2: directory.employees is watched without scope columns'
            USING HINT = 'Run ALTER EXTENSION pg_memo UPDATE, then SELECT memo.watch(''directory.employees'', true, ''{path, id}'');';
    END IF;
END;
$$;
