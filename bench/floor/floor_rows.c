/*
 * floor_rows: the cheapest possible function-call hit, for bench/compare.sh.
 *
 * floor_rows(scope_root, page, page_size, sort, filters) has the signature
 * and defaults of directory.cached_list_employees, but no cache: it returns
 * page_snapshot's rows, read once per backend and kept in backend memory.
 * No key, no lookup, no shared memory. Whatever a simple-protocol call of it
 * costs beyond reading page_snapshot is PostgreSQL's price for a function
 * call in FROM, which any function-based cache pays.
 */
#include "postgres.h"

#include "executor/spi.h"
#include "funcapi.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

PG_MODULE_MAGIC;
PG_FUNCTION_INFO_V1(floor_rows);

static HeapTuple *saved_rows;
static uint64 saved_count;

static void load_rows(void) {
    MemoryContext old;

    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    if (SPI_execute("SELECT * FROM page_snapshot", true, 0) != SPI_OK_SELECT)
        elog(ERROR, "reading page_snapshot failed");
    old = MemoryContextSwitchTo(TopMemoryContext);
    saved_rows = palloc(sizeof(HeapTuple) * Max(SPI_processed, 1));
    for (uint64 i = 0; i < SPI_processed; i++) saved_rows[i] = heap_copytuple(SPI_tuptable->vals[i]);
    MemoryContextSwitchTo(old);
    saved_count = SPI_processed;
    SPI_finish();
}

Datum floor_rows(PG_FUNCTION_ARGS) {
    ReturnSetInfo *rsinfo = (ReturnSetInfo *)fcinfo->resultinfo;

    if (saved_rows == NULL) load_rows();
    /* The rows are stored with page_snapshot's row type, which has the same columns. */
    InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
    for (uint64 i = 0; i < saved_count; i++) tuplestore_puttuple(rsinfo->setResult, saved_rows[i]);
    return (Datum)0;
}
