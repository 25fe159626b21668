# pg_memo: PGXS build of the extension, plus its pg_regress and TAP suites.
# The pure C++ core is also built on its own by CMakeLists.txt (ctest), from
# the same list of sources (src/core/sources.mk).

EXTENSION  = pg_memo
MODULE_big = pg_memo
# The install script and the upgrade scripts, beside the control file (as in
# contrib); sql/ and expected/ are pg_regress's, as PGXS expects them.
DATA       = $(wildcard $(EXTENSION)--*.sql)
PGFILEDESC = "pg_memo - memoized query results in shared memory"

include src/core/sources.mk
CORE_OBJS = $(PG_MEMO_CORE_SOURCES:.cpp=.o)
# The glue: every source under src/pg, by folder.
GLUE_OBJS = $(patsubst %.cpp,%.o,$(sort $(wildcard src/pg/*.cpp src/pg/*/*.cpp)))
OBJS = $(CORE_OBJS) $(GLUE_OBJS)

PG_CPPFLAGS = -I$(srcdir)/src/core -I$(srcdir)/src/pg
PG_CXXFLAGS = -std=c++17 -Wno-register -MMD -MP
SHLIB_LINK += -lstdc++

# pg_regress suites: sql/<suite>.sql, checked against
# expected/<suite>.out, on a temporary instance that preloads pg_memo
# (test/regress.conf). Each suite runs alone too (make installcheck
# REGRESS=ddl TAP_TESTS=): sql/include/setup.sql creates what they
# share. Results go to results/ and regression.diffs.
REGRESS = basics refusals invalidation security stats ddl edge_cases privileges deltas older_answers registrations registered scopes params settings_functions entries admission row_security
REGRESS_OPTS = --inputdir=$(srcdir) \
               --temp-instance=$(CURDIR)/tmp_check_regress \
               --temp-config=$(srcdir)/test/regress.conf

# TAP suites: each starts its own clusters.
TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

EXTRA_CLEAN = tmp_check_regress $(OBJS:.o=.d)

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Rebuild objects when a header they include changes.
-include $(OBJS:.o=.d)

# Debian builds LLVM bitcode with clang, which needs the same language level.
BITCODE_CXXFLAGS += -std=c++17 -Wno-register

# The glue throws and catches nothing: -fno-exceptions makes the compiler keep
# it so (src/pg/pg_memo.hpp). Only the core may use C++ exceptions, caught
# inside it (Boost laying out the arena).
$(GLUE_OBJS): override CXXFLAGS += -fno-exceptions
$(GLUE_OBJS:.o=.bc): override BITCODE_CXXFLAGS += -fno-exceptions
