\set tenant random(1, 1000)
BEGIN;
SELECT set_config('role', 'bt_web', true), set_config('request.jwt.claims', '{"tenant": ' || :tenant || '}', true);
SELECT i.id, i.title, i.status, i.created_at, u.name FROM bt_items i JOIN bt_users u ON u.id = i.author_id WHERE i.status <> 'archived' ORDER BY i.created_at DESC, i.id LIMIT 20;
SELECT count(*) FROM bt_items i WHERE i.status <> 'archived';
COMMIT;
