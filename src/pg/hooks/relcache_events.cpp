// The one relcache callback (relcache_events.hpp). Each invalidation
// (relid, or InvalidOid for all) passes, in this order, to:
//   1. registered statements' copy of memo.statements
//      (registered/registrations.hpp): read again once memo.statements
//      changed (its statement trigger sends the invalidation);
//   2. the shapes the planner hook keeps by query identifier
//      (registered/plan_hook.hpp): forgotten, since a replaced view changes
//      the shape of a statement over it and not its identifier.
#include "hooks/relcache_events.hpp"

#include "registered/plan_hook.hpp"
#include "registered/registrations.hpp"

namespace pgmemo {

void on_relcache_invalidation(Datum arg, Oid relid) {
    registrations_out_of_date(arg, relid);
    forget_known_shapes(arg, relid);
}

}  // namespace pgmemo
