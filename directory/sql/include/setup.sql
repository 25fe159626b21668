\set ECHO none
-- Included at the top of the suites that follow directory_seed (which
-- creates the extension itself, and checks that it does): creates
-- pg_memo_directory and pg_memo if they are not there yet, silently, so that
-- a suite runs alone (make installcheck REGRESS=directory_errors) or after
-- the others, with the same output.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_memo_directory CASCADE;
RESET client_min_messages;
\set ECHO all
