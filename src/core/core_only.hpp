// Included first by every source of the core: the core is plain C++ and
// never sees a PostgreSQL header (docs/architecture.md, "The C/C++
// boundary"). A PostgreSQL header included before this one stops the build
// here; postgres.h included after it is skipped (its include guard is set),
// so code of the core that uses PostgreSQL does not compile either.
#pragma once

#ifdef PG_VERSION_NUM
#error "a source of src/core includes PostgreSQL headers: the core must not (docs/architecture.md)"
#endif
#define POSTGRES_H
#define POSTGRES_FE_H
#define C_H
