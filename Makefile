# pg_memo: PGXS build of the extension, plus its pg_regress and TAP suites.
# The pure C++ core is also built on its own by CMakeLists.txt (ctest).

EXTENSION  = pg_memo
MODULE_big = pg_memo
DATA       = pg_memo--1.0.sql pg_memo--1.0--1.1.sql
PGFILEDESC = "pg_memo - memoized query results in shared memory"

CORE_OBJS = src/core/hash.o src/core/key.o src/core/generations.o \
            src/core/stats.o src/core/result_format.o src/core/store.o \
            src/core/flight.o
GLUE_OBJS = src/pg/pg_memo.o src/pg/invalidation.o src/pg/query_analysis.o \
            src/pg/memo_functions.o src/pg/admin_functions.o \
            src/pg/flights.o
OBJS = $(CORE_OBJS) $(GLUE_OBJS)

PG_CPPFLAGS = -I$(srcdir)/src/core
PG_CXXFLAGS = -std=c++17 -Wno-register -MMD -MP
SHLIB_LINK += -lstdc++

# pg_regress suites in sql/ + expected/, on a temporary instance that
# preloads pg_memo (test/regress.conf).
REGRESS = basics refusals invalidation security stats ddl edge_cases security_review
REGRESS_OPTS = --temp-instance=$(CURDIR)/tmp_check_regress \
               --temp-config=$(srcdir)/test/regress.conf

# TAP suites: each starts its own clusters.
TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Rebuild objects when a header they include changes.
-include $(OBJS:.o=.d)
EXTRA_CLEAN = $(OBJS:.o=.d)

# Debian builds LLVM bitcode with clang, which needs the same language level.
BITCODE_CXXFLAGS += -std=c++17 -Wno-register
