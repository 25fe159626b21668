\set tenant random(1, 1000)
\set author random(1, 10000)
BEGIN;
SELECT set_config('role', 'bt_web', true), set_config('request.jwt.claims', '{"tenant": ' || :tenant || '}', true);
INSERT INTO bt_items (tenant_id, author_id, title, status, created_at, body)
  VALUES (:tenant, :author, 'written', 'open', now(), repeat('w', 120));
COMMIT;
