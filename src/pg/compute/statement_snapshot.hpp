// Which snapshot a call's result must be as of (docs/consistency.md,
// "Which snapshot each path uses").
//
// A memo call answers as of the call: a new snapshot, taken after the
// generations were read; so does a registered statement of a simple Query
// message under READ COMMITTED (memo_scan_exec.cpp). Another registered
// statement answers as of its own snapshot, the one PostgreSQL gave its
// portal (Call::as_of), which may be older than the call: a cursor fetched
// after later commits, a Bind executed later, a transaction's own later
// writes. What the cache holds as of now, or a new snapshot, is that
// snapshot's answer only while no transaction has ended since it was
// taken; an entry computed as of the state it sees (its print) is its
// answer however old.
#pragma once

#include "call.hpp"
#include "copy_out_sink.hpp"

namespace pgmemo {

// Whether snapshot sees exactly what a snapshot taken now sees.
bool sees_what_now_sees(Snapshot snapshot);

// The committed state snapshot sees, as a number (EntryParts::
// snapshot_print), or 0 when it cannot be named so cheaply: an entry
// computed with a snapshot of the same print holds this snapshot's answer,
// whatever was committed since (docs/consistency.md, "Entries as of their
// snapshot").
uint64_t snapshot_print(Snapshot snapshot);

// Whether the call may be answered with what holds now: a call without a
// snapshot of its own (a memo call, a simple Query's or SQL EXECUTE's
// statement) always (inline: their hit path pays no call); another
// registered statement while its snapshot sees exactly what a snapshot
// taken now sees. Asked after what it decides about is read (a lookup, the
// generations), so that "now" is no earlier than that read.
inline bool answers_as_of_now(const Call &call) {
    return call.as_of == InvalidSnapshot || sees_what_now_sees(call.as_of);
}

// The print of the call's snapshot, for a lookup that may give an entry as
// of it (HitSink::as_of_print): 0 for a call that answers as of now (a
// memo call, a simple Query's or SQL EXECUTE's statement).
inline uint64_t as_of_print(const Call &call) {
    return call.as_of == InvalidSnapshot ? 0 : snapshot_print(call.as_of);
}

// Whether the entry a lookup copied into sink (status) is the call's
// answer, asked after the lookup: a current entry while the call answers
// as of now; otherwise one, current or not, computed as of the state the
// call's snapshot sees.
bool entry_answers_call(const Call &call, LookupStatus status, const CopyOutSink &sink);

}  // namespace pgmemo
