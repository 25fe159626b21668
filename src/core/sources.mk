# The sources of pg_memo's pure C++ core (no PostgreSQL headers), in one
# place. The Makefile includes this file (CORE_OBJS, linked into pg_memo.so);
# CMakeLists.txt takes every path below that ends in .cpp (the pg_memo_core
# library of the unit tests, and the libFuzzer target). Paths are from the
# top of the checkout, one a line, each followed by a backslash but the last.
PG_MEMO_CORE_SOURCES = \
	src/core/hash.cpp \
	src/core/key.cpp \
	src/core/generations.cpp \
	src/core/stats.cpp \
	src/core/result_format.cpp \
	src/core/store.cpp \
	src/core/flight.cpp \
	src/core/delta_log.cpp \
	src/core/saved_cache.cpp \
	src/core/prepared_marks.cpp \
	src/core/admission_policy.cpp
