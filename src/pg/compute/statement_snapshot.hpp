// Which snapshot a call's result must be as of (docs/consistency.md,
// "Which snapshot each path uses").
//
// A memo call answers as of the call: a new snapshot, taken after the
// generations were read; so does a registered statement of a simple Query
// message under READ COMMITTED (memo_scan_exec.cpp). Another registered
// statement answers as of its own snapshot, the one PostgreSQL gave its
// portal (Call::as_of), which may be older than the call: a cursor fetched
// after later commits, a Bind executed later, a transaction's own later
// writes. What the cache holds,
// or a new snapshot, is that snapshot's answer only while no transaction
// has ended since it was taken.
#pragma once

#include "call.hpp"

namespace pgmemo {

// Whether snapshot sees exactly what a snapshot taken now sees.
bool sees_what_now_sees(Snapshot snapshot);

// Whether the call may be answered with what holds now: a memo call
// always (inline: the memo functions' hit path pays no call); a registered
// statement while its snapshot sees exactly what a snapshot taken now
// sees. Asked after what it decides about is read (a lookup, the
// generations), so that "now" is no earlier than that read.
inline bool answers_as_of_now(const Call &call) {
    return call.as_of == InvalidSnapshot || sees_what_now_sees(call.as_of);
}

}  // namespace pgmemo
