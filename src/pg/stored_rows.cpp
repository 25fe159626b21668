// A stored row result's descriptor (stored_rows.hpp).
#include "stored_rows.hpp"

namespace pgmemo {

TupleDesc stored_descriptor(const ResultReader &rd) {
    TupleDesc desc = CreateTemplateTupleDesc(int(rd.ncolumns()));
    for (uint32_t i = 0; i < rd.ncolumns(); i++)
        TupleDescInitEntry(desc, AttrNumber(i + 1), psprintf("column%u", i + 1), rd.columns()[i].type_oid,
                           rd.columns()[i].typmod, 0);
    return desc;
}

}  // namespace pgmemo
