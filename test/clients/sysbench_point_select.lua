#!/usr/bin/sysbench
-- sysbench's point select, each result compared (issue 47; test/t/025).
--
-- The statement of sysbench's oltp_point_select, prepared through
-- sysbench's own pgsql driver exactly as oltp_common.lua prepares it
-- ("SELECT c FROM sbtest1 WHERE id=?", its parameter of sysbench's INT
-- type, which the driver prepares as a bigint; with --db-ps-mode=disable
-- the driver puts the value in the text instead),
-- ids drawn from sysbench's default distribution as oltp_point_select
-- draws them, on two connections: the application's, which pg_memo serves
-- (by a registration of the statement's shape, or admitted automatically),
-- and one where pg_memo serves nothing (pg_memo.serve_statements = off).
-- Every --write-every events, the application's connection updates c of
-- a row drawn the same way (oltp_common.lua's non-index update), so that
-- a result served stale would show. One thread; at its end prints
-- "checked=N mismatches=M writes=W" and the first mismatches.
--
-- usage: sysbench sysbench_point_select.lua --db-driver=pgsql --pgsql-...
--          --table-size=N --events=N --threads=1 run
-- (on sbtest1 as "sysbench oltp_point_select ... prepare" makes it)

sysbench.cmdline.options = {
   table_size = {"Number of rows in sbtest1", 1000},
   write_every = {"Update one row every this many events", 20},
}

local function prepared(con, sql, ...)
   local stmt = con:prepare(sql)
   local params = {}
   for i, btype in ipairs({...}) do
      if type(btype) == "table" then
         params[i] = stmt:bind_create(btype[1], btype[2])
      else
         params[i] = stmt:bind_create(btype)
      end
   end
   stmt:bind_param(unpack(params))
   return stmt, params
end

function thread_init()
   local t = sysbench.sql.type
   drv = sysbench.sql.driver()
   app = drv:connect()
   truth = drv:connect()
   truth:query("SET pg_memo.serve_statements = off")
   local serving = truth:query("SHOW pg_memo.serve_statements"):fetch_row()[1]
   if serving ~= "off" then
      error("the truth's connection must have serving off, not " .. tostring(serving))
   end
   app_select, app_params = prepared(app, "SELECT c FROM sbtest1 WHERE id=?", t.INT)
   truth_select, truth_params = prepared(truth, "SELECT c FROM sbtest1 WHERE id=?", t.INT)
   update, update_params = prepared(app, "UPDATE sbtest1 SET c=? WHERE id=?", {t.CHAR, 120}, t.INT)
   events, checked, mismatches, writes = 0, 0, 0, 0
   shown = {}
end

local function point_select(stmt, params, id)
   params[1]:set(id)
   local rs = stmt:execute()
   local row = rs:fetch_row()
   return row and row[1] or "(no row)"
end

function event()
   local id = sysbench.rand.default(1, sysbench.opt.table_size)
   local got = point_select(app_select, app_params, id)
   local want = point_select(truth_select, truth_params, id)
   checked = checked + 1
   if got ~= want then
      mismatches = mismatches + 1
      if #shown < 3 then
         shown[#shown + 1] = string.format("id=%d: got %q want %q", id, got, want)
      end
   end
   events = events + 1
   if events % sysbench.opt.write_every == 0 then
      update_params[1]:set(sysbench.rand.string("###########-###########-###########-" .. events))
      update_params[2]:set(sysbench.rand.default(1, sysbench.opt.table_size))
      update:execute()
      writes = writes + 1
   end
end

function thread_done()
   print(string.format("checked=%d mismatches=%d writes=%d", checked, mismatches, writes))
   for _, line in ipairs(shown) do
      print(line)
   end
   app:disconnect()
   truth:disconnect()
end
