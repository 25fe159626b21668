// libFuzzer target: the core's key and result encodings on arbitrary bytes
// (properties in core_fuzz_checks.hpp). Built with -DPG_MEMO_FUZZ=ON and
// clang; run by test/fuzz/run.sh.
#include <cstdio>
#include <cstdlib>

#include "core_fuzz_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    std::string failure = pgmemo::fuzz::check_all(data, size);
    if (!failure.empty()) {
        std::fprintf(stderr, "pg_memo core property broken: %s\n", failure.c_str());
        std::abort();  // libFuzzer saves the input as crash-*
    }
    return 0;
}
