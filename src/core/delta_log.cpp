#include "core_only.hpp"  // first: no PostgreSQL in the core
#include "delta_log.hpp"

#include <cstring>

namespace pgmemo {

struct DeltaLog::Shared {
    uint64_t ring_bytes;
    uint64_t head;     // position of the next record
    uint64_t records;  // reserved so far
    std::atomic<uint64_t> fallbacks;  // commits of watched rows bumped without a record (no lock)
    uint64_t newest[Generations::kSlots];  // position + 1 of each slot's newest published record
    // the ring follows
    char *ring() noexcept { return reinterpret_cast<char *>(this + 1); }
};

namespace {
uint64_t align8(uint64_t n) { return (n + 7) & ~uint64_t(7); }
}  // namespace

size_t DeltaLog::shared_size(uint64_t ring_bytes) noexcept { return sizeof(Shared) + align8(ring_bytes); }

void DeltaLog::initialize(void *mem, uint64_t ring_bytes) noexcept {
    auto *s = static_cast<Shared *>(mem);
    std::memset(mem, 0, sizeof(Shared));
    s->ring_bytes = align8(ring_bytes);
    s->head = 0;
}

DeltaLog DeltaLog::attach(void *mem) noexcept { return DeltaLog(static_cast<Shared *>(mem)); }

uint64_t DeltaLog::max_record_bytes() const noexcept { return s_->ring_bytes / 4; }

DeltaRecord *DeltaLog::at(uint64_t position) const noexcept {
    return reinterpret_cast<DeltaRecord *>(s_->ring() + position % s_->ring_bytes);
}

bool DeltaLog::intact(uint64_t position) const noexcept {
    return position + s_->ring_bytes >= s_->head && position < s_->head;
}

DeltaRecord *DeltaLog::reserve(uint32_t slot, uint32_t dbid, uint32_t relid, uint32_t xid, uint32_t nold,
                               uint32_t nnew, uint64_t data_len) noexcept {
    uint64_t length = align8(sizeof(DeltaRecord) + data_len);
    if (length > max_record_bytes()) return nullptr;
    uint64_t offset = s_->head % s_->ring_bytes;
    if (offset + length > s_->ring_bytes) s_->head += s_->ring_bytes - offset;  // never split across the end
    uint64_t position = s_->head;
    s_->head += length;
    s_->records++;
    DeltaRecord *r = at(position);
    r->position = position;
    r->generation = 0;
    r->prev = 0;
    r->length = uint32_t(length);
    r->slot = slot;
    r->dbid = dbid;
    r->relid = relid;
    r->xid = xid;
    r->nold = nold;
    r->nnew = nnew;
    r->data_len = uint32_t(data_len);
    return r;
}

bool DeltaLog::publish(uint64_t position, uint64_t generation) noexcept {
    if (!intact(position)) return false;
    DeltaRecord *r = at(position);
    if (r->position != position || r->generation != 0) return false;
    r->generation = generation;
    r->prev = s_->newest[r->slot];
    s_->newest[r->slot] = position + 1;
    return true;
}

Collected DeltaLog::collect(uint32_t slot, uint64_t stamp, uint64_t current, const DeltaRecord **out,
                            uint32_t capacity, uint32_t *count) const noexcept {
    *count = 0;
    uint64_t link = s_->newest[slot];
    for (uint64_t expected = current; expected > stamp; expected--) {
        if (link == 0 || !intact(link - 1)) return Collected::Gap;
        const DeltaRecord *r = at(link - 1);
        // A bump without a record lies between this record and the last.
        if (r->position != link - 1 || r->generation != expected) return Collected::Gap;
        if (*count == capacity) return Collected::TooMany;
        out[(*count)++] = r;
        link = r->prev;
    }
    return Collected::Complete;
}

uint64_t DeltaLog::records_written() const noexcept { return s_->records; }

void DeltaLog::note_fallback() noexcept { s_->fallbacks.fetch_add(1, std::memory_order_relaxed); }

uint64_t DeltaLog::fallbacks() const noexcept { return s_->fallbacks.load(std::memory_order_relaxed); }

bool DeltaRowReader::next(const char **row, uint32_t *len, bool *is_new) noexcept {
    if (left_ == 0 || end_ - at_ < 8) return false;
    uint32_t n;
    std::memcpy(&n, at_, 4);
    if (uint64_t(end_ - at_) < DeltaRowWriter::row_space(n)) return false;
    *row = at_ + 8;
    *len = n;
    *is_new = index_ >= nold_;
    at_ += DeltaRowWriter::row_space(n);
    left_--;
    index_++;
    return true;
}

void DeltaRowWriter::add(const void *row, uint32_t len) noexcept {
    std::memcpy(at_, &len, 4);
    std::memcpy(at_ + 8, row, len);
    at_ += row_space(len);
}

}  // namespace pgmemo
