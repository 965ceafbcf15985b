// Bounded ring of variable-length records for one partition.
//
// Slots hold {offset, length, end} into a preallocated byte arena; payload bytes are copied once, by the
// producer, straight into the arena. Positions are free-running 32-bit counters packed as (slot << 32 |
// arena byte) in one 64-bit atomic, so a producer claims slots and arena bytes in a single CAS
// (several producers may share a ring). Claims are published in order: a producer writes its records,
// then waits for the previous claim to be committed and commits its own (Vyukov/LMAX-style sequencing).
// Consumers (the owning consumer, or a producer evicting under drop-oldest) claim at the head with a CAS.
// A claimed record stays in the ring until it is acknowledged (`Ack`): a consumer thread may hold what it
// popped until its handlers finish, so that if the thread dies the records are still there to hand to
// another (`TakeHeld`). Acks may come in any order. An ack of the oldest records held moves the release head
// over them at once (one CAS); any other marks its slots done, and the release head moves over every done
// slot in a row; either hands the slots and bytes back to producers. A slot's done mark goes from
// "unacknowledged" (position - capacity + 1, set by the producer) to "done" (position + 1) by a CAS, so an
// ack that comes late, for records `TakeHeld` took while their consumer still held them, changes nothing,
// whatever lap the slot is in by then.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "stream-copy.h"

namespace eventlane {

constexpr size_t kCacheLine = 64;

inline uint64_t Pack(uint32_t slot, uint32_t arena) { return (uint64_t(slot) << 32) | arena; }
inline uint32_t SlotOf(uint64_t p) { return uint32_t(p >> 32); }
inline uint32_t ArenaOf(uint64_t p) { return uint32_t(p); }

inline uint32_t RoundUpPow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return uint32_t(p);
}

// off, len and chars are atomics (relaxed: plain moves) because TakeHeld may read a slot that a producer is
// reusing; it then drops what it read.
struct Slot {
  std::atomic<uint32_t> off{0};  // physical offset of the record in the arena
  std::atomic<uint32_t> len{0};  // bytes
  // Logical arena position after this record (and the batch separator, for the last one). Atomic because
  // an acker may read it while another acker has already released the slot to a producer (its CAS then fails).
  std::atomic<uint32_t> end{0};
  std::atomic<uint32_t> chars{0};  // length in UTF-16 code units (what JS string offsets count)
  // Who popped the record with `hold` (Pop's `holder`), so that TakeHeld takes only a dead thread's records;
  // 0 from the producer's claim until then.
  std::atomic<uint32_t> holder{0};
  // (position - capacity + 1) while the record is unacknowledged (set when it is claimed), (position + 1)
  // once marked done.
  std::atomic<uint32_t> done{0};
};

// Exact counters; written with relaxed atomics, read as a snapshot.
struct Counters {
  std::atomic<uint64_t> pushed{0};
  std::atomic<uint64_t> popped{0};
  std::atomic<uint64_t> droppedNewest{0};
  std::atomic<uint64_t> droppedOldest{0};
  std::atomic<uint64_t> rejected{0};
};

enum PushMode : int {
  kPartial = 0,      // accept the prefix that fits (block: the caller retries with the rest)
  kAllOrNothing = 1, // error strategy: accept all or none (counted as rejected)
  kEvictOldest = 2,  // drop-oldest: evict the oldest records until everything fits
  kDropNewest = 3,   // drop-newest: accept the prefix that fits, count the rest as dropped
  kProbe = 4,        // try-publish check: whether all would fit now; nothing claimed, nothing counted
  kRefuse = 5,       // error strategy, refused for another ring: nothing claimed, all counted as rejected
};

// A claimed range of slots and arena bytes, to be filled and then committed.
struct Reservation {
  uint64_t start = 0;   // packed claim start
  uint64_t end = 0;     // packed claim end
  uint32_t count = 0;   // records
  uint32_t dst = 0;     // physical arena offset of the first record
  uint32_t bytes = 0;   // record bytes (the separator byte follows at dst + bytes)
};

class Ring {
 public:
  // capacity and arenaBytes must be powers of two (the factory rounds them up).
  Ring(uint32_t capacity, uint32_t arenaBytes)
      : cap_(capacity), mask_(capacity - 1), arenaBytes_(arenaBytes), amask_(arenaBytes - 1),
        slots_(new Slot[capacity]()), arena_(new uint8_t[arenaBytes]()) {}

  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  uint32_t capacity() const { return cap_; }
  uint32_t arenaBytes() const { return arenaBytes_; }
  uint8_t* arena() { return arena_.get(); }
  Counters& counters() { return counters_; }

  // Snapshots: the trailing counter is read first (it never passes the leading one, so the difference
  // cannot go below 0), and the result is capped at the capacity (the leading one may have gone on since).
  uint32_t Size() const {
    const uint32_t h = claimHead_.load(std::memory_order_acquire);
    const uint32_t n = SlotOf(commitTail_.load(std::memory_order_acquire)) - h;
    return n < cap_ ? n : cap_;
  }

  // Records claimed by consumers and not yet acknowledged (a snapshot).
  uint32_t Held() const {
    const uint32_t r = SlotOf(releaseHead_.load(std::memory_order_acquire));
    const uint32_t n = claimHead_.load(std::memory_order_acquire) - r;
    return n < cap_ ? n : cap_;
  }

  // Largest record accepted: half the arena minus the batch separator, so that a record always fits an
  // empty ring wherever its positions stand (before the arena end, or after wrapping to the start).
  uint32_t MaxRecordBytes() const { return arenaBytes_ / 2 - 1; }

  // Whether all of `lens` fit now (nothing is claimed). Exact when every producer of the ring is the calling
  // thread: consumers only hand room back, so what fits here still fits at the next Reserve.
  bool Fits(const uint32_t* lens, uint32_t n) const {
    uint32_t k = 0, bytes = 0, pad = 0;
    return Plan(claimTail_.load(std::memory_order_acquire), releaseHead_.load(std::memory_order_acquire), lens, n, true, &k, &bytes, &pad);
  }

  // Claims room for the longest prefix of `lens` (bytes; `chars` in UTF-16 units) that fits (all of it, or
  // none, when allOrNothing). Returns false when nothing was claimed.
  bool Reserve(const uint32_t* lens, const uint32_t* chars, uint32_t n, bool allOrNothing, Reservation* out) {
    uint64_t t = claimTail_.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t r = releaseHead_.load(std::memory_order_acquire);
      const uint32_t off = ArenaOf(t) & amask_;
      uint32_t k = 0, bytes = 0, pad = 0;
      if (!Plan(t, r, lens, n, allOrNothing, &k, &bytes, &pad)) return false;
      const uint64_t next = Pack(SlotOf(t) + k, ArenaOf(t) + pad + bytes + 1);
      if (claimTail_.compare_exchange_weak(t, next, std::memory_order_acq_rel, std::memory_order_relaxed)) {
        out->start = t;
        out->end = next;
        out->count = k;
        out->dst = pad ? 0 : off;
        out->bytes = bytes;
        uint32_t pos = out->dst, logical = ArenaOf(t) + pad;
        for (uint32_t i = 0; i < k; i++) {
          Slot& s = slots_[(SlotOf(t) + i) & mask_];
          s.done.store(SlotOf(t) + i - cap_ + 1, std::memory_order_relaxed);  // unacknowledged
          s.off.store(pos, std::memory_order_relaxed);
          s.len.store(lens[i], std::memory_order_relaxed);
          s.chars.store(chars[i], std::memory_order_relaxed);
          s.holder.store(0, std::memory_order_relaxed);
          pos += lens[i];
          logical += lens[i];
          s.end.store(i + 1 == k ? ArenaOf(next) : logical, std::memory_order_relaxed);
        }
        return true;
      }
    }
  }

  // Copies a reservation's record bytes (consecutive at `src`) into the arena; then `Commit`.
  void Fill(const Reservation& res, const uint8_t* src) { StreamCopy(arena_.get() + res.dst, src, res.bytes); }

  // Publishes a filled reservation, in claim order.
  void Commit(const Reservation& res) {
    arena_[res.dst + res.bytes] = ' ';  // batch separator: JSON whitespace
    WaitFor(commitTail_, res.start);
    commitTail_.store(res.end, std::memory_order_release);
    counters_.pushed.fetch_add(res.count, std::memory_order_relaxed);
  }

  // Evicts up to `max` of the oldest committed records that no consumer holds. Returns how many. Their room
  // comes back once the records before them are acknowledged too.
  uint32_t Evict(uint32_t max) {
    uint32_t h = claimHead_.load(std::memory_order_relaxed);
    for (;;) {
      const uint32_t avail = SlotOf(commitTail_.load(std::memory_order_acquire)) - h;
      const uint32_t k = avail < max ? avail : max;
      if (k == 0) return 0;
      if (claimHead_.compare_exchange_weak(h, h + k, std::memory_order_acq_rel, std::memory_order_relaxed)) {
        counters_.droppedOldest.fetch_add(k, std::memory_order_relaxed);
        Ack(h, k);
        return k;
      }
    }
  }

  // Acknowledges the records at positions [h, h + k) (claimed by Pop or Evict); any thread, any order. A
  // record already acknowledged, or taken by TakeHeld (its slot maybe reused since), is left alone.
  void Ack(uint32_t h, uint32_t k) {
    if (k == 0) return;
    uint64_t r = releaseHead_.load(std::memory_order_seq_cst);
    // The oldest records held: released at once, with no done marks. (Were they released already, the
    // release head would be past h.) TakeHeld may have copied some: they are delivered twice, never lost.
    if (SlotOf(r) == h && int32_t(claimHead_.load(std::memory_order_seq_cst) - (h + k)) >= 0) {
      const uint32_t end = slots_[(h + k - 1) & mask_].end.load(std::memory_order_relaxed);
      if (releaseHead_.compare_exchange_strong(r, Pack(h + k, end), std::memory_order_seq_cst)) return Advance();
    }
    // A CAS per record, not a store: a late store could overwrite the mark of the slot's next lap.
    for (uint32_t i = 0; i < k; i++) {
      const uint32_t pos = h + i;
      uint32_t unacked = pos - cap_ + 1;
      slots_[pos & mask_].done.compare_exchange_strong(unacked, pos + 1, std::memory_order_seq_cst, std::memory_order_relaxed);
    }
    Advance();
  }

  // Records claimed and not acknowledged (held by consumers), oldest first: appends each record's bytes to
  // `bytes` and its length in UTF-16 units to `chars`, and acknowledges it. For a consumer thread that died
  // holding records: with `holder` > 0, only the records Pop held for that holder (the other consumers of
  // the ring keep theirs) and claimed records nobody marked yet (a popper stopped between its claim and its
  // marks: the JS core's thread can be terminated there; a live one's are delivered twice, never lost); with
  // 0, every held record (a record a live consumer holds is then delivered twice, never lost). Returns how many.
  // The dead thread stored its holder marks before it died, and its death reached the caller through the
  // runtime's synchronisation (a thread join, a message), so they are seen; a mark a producer reset to 0
  // since belongs to a record that was acknowledged.
  uint32_t TakeHeld(std::string* bytes, std::vector<uint32_t>* chars, uint32_t holder = 0) {
    const uint32_t from = SlotOf(releaseHead_.load(std::memory_order_acquire));
    const uint32_t to = claimHead_.load(std::memory_order_acquire);
    uint32_t taken = 0;
    for (uint32_t pos = from; pos != to; pos++) {
      Slot& s = slots_[pos & mask_];
      uint32_t seen = pos - cap_ + 1;
      if (s.done.load(std::memory_order_seq_cst) != seen) continue;  // acknowledged (in this lap or a later one)
      if (holder != 0) {
        const uint32_t mark = s.holder.load(std::memory_order_relaxed);
        if (mark != holder && mark != 0) continue;  // another consumer's
      }
      // Copied first, then claimed. If its consumer acknowledged it meanwhile, the CAS fails, or (an ack of
      // the oldest records releases them without marks) the release head has passed it: the copy, maybe of
      // another record by then, is dropped. Reused, the slot may show the offset of one record and the
      // length of another: a range outside the arena is not read at all (the record was acknowledged).
      const uint32_t off = s.off.load(std::memory_order_relaxed), len = s.len.load(std::memory_order_relaxed);
      const uint32_t n = s.chars.load(std::memory_order_relaxed);
      if (off > arenaBytes_ || len > arenaBytes_ - off) continue;
      const size_t mark = bytes->size();
      bytes->append(reinterpret_cast<const char*>(arena_.get() + off), len);
      if (s.done.compare_exchange_strong(seen, pos + 1, std::memory_order_seq_cst) &&
          int32_t(SlotOf(releaseHead_.load(std::memory_order_seq_cst)) - pos) <= 0) {
        chars->push_back(n);
        taken++;
      } else {
        bytes->resize(mark);
      }
    }
    Advance();
    return taken;
  }

  // Pops up to `max` records. `emit(segments)` is called while the records are still held, with one or two
  // contiguous byte ranges (two when the claim wraps the arena end). When `charOffs` is given (max + 1
  // entries) it receives each record's start in the joined text, in UTF-16 units, and the end. Returns the
  // number of records.
  // With `hold`, the records stay in the ring until `Ack(*start, k)`, marked as `holder`'s (see TakeHeld);
  // otherwise they are acknowledged here.
  template <typename Emit>
  uint32_t Pop(uint32_t max, Emit&& emit, uint32_t* charOffs = nullptr, bool hold = false, uint32_t* start = nullptr, uint32_t holder = 0) {
    uint32_t h = claimHead_.load(std::memory_order_relaxed);
    uint32_t k;
    for (;;) {
      const uint32_t avail = SlotOf(commitTail_.load(std::memory_order_acquire)) - h;
      k = avail < max ? avail : max;
      if (k == 0) return 0;
      if (claimHead_.compare_exchange_weak(h, h + k, std::memory_order_acq_rel, std::memory_order_relaxed)) break;
    }
    if (hold && holder != 0) {
      for (uint32_t i = 0; i < k; i++) slots_[(h + i) & mask_].holder.store(holder, std::memory_order_relaxed);
    }
    // Records are contiguous except where a batch wrapped to the arena start.
    const Slot& first = slots_[h & mask_];
    uint32_t segStart = first.off.load(std::memory_order_relaxed);
    uint32_t segEnd = segStart + first.len.load(std::memory_order_relaxed);
    uint32_t charPos = first.chars.load(std::memory_order_relaxed);
    if (charOffs) charOffs[0] = 0;
    const uint8_t* p1 = nullptr;
    size_t n1 = 0;
    for (uint32_t i = 1; i < k; i++) {
      const Slot& s = slots_[(h + i) & mask_];
      const uint32_t off = s.off.load(std::memory_order_relaxed);
      if (off < segEnd) {  // wrapped: the next segment is joined directly
        p1 = arena_.get() + segStart;
        n1 = segEnd - segStart;
        segStart = off;
      } else {
        charPos += off - segEnd;  // 0, or the 1-byte batch separator
      }
      if (charOffs) charOffs[i] = charPos;
      charPos += s.chars.load(std::memory_order_relaxed);
      segEnd = off + s.len.load(std::memory_order_relaxed);
    }
    if (charOffs) charOffs[k] = charPos;
    if (p1 == nullptr) {
      emit(arena_.get() + segStart, size_t(segEnd - segStart), nullptr, size_t(0), k);
    } else {
      emit(p1, n1, arena_.get() + segStart, size_t(segEnd - segStart), k);
    }
    counters_.popped.fetch_add(k, std::memory_order_relaxed);
    if (start) *start = h;
    if (!hold) Ack(h, k);
    return k;
  }

 private:
  // The room for a prefix of `lens` with the claim tail at `t` and the release head at `r`: `k` records of
  // `bytes` bytes, after `pad` bytes skipped to wrap to the arena start. False when none fit (or, with
  // allOrNothing, not all).
  bool Plan(uint64_t t, uint64_t r, const uint32_t* lens, uint32_t n, bool allOrNothing, uint32_t* k, uint32_t* bytes, uint32_t* pad) const {
    const uint32_t freeSlots = cap_ - (SlotOf(t) - SlotOf(r));
    const uint32_t freeBytes = arenaBytes_ - (ArenaOf(t) - ArenaOf(r));
    const uint32_t off = ArenaOf(t) & amask_;
    const uint32_t room = arenaBytes_ - off;  // contiguous bytes before the arena end
    const uint32_t maxN = n < freeSlots ? n : freeSlots;
    uint32_t b1 = 0;
    const uint32_t k1 = Fit(lens, maxN, freeBytes < room ? freeBytes : room, &b1);
    *k = k1, *bytes = b1, *pad = 0;
    if (k1 < maxN && freeBytes > room) {
      uint32_t b2 = 0;
      const uint32_t k2 = Fit(lens, maxN, freeBytes - room, &b2);
      if (k2 > k1) *k = k2, *bytes = b2, *pad = room;
    }
    return !(*k == 0 || (allOrNothing && *k < n));
  }

  static uint32_t Fit(const uint32_t* lens, uint32_t maxN, uint32_t avail, uint32_t* bytes) {
    if (avail == 0) return 0;
    uint64_t sum = 0;
    uint32_t k = 0;
    while (k < maxN && sum + lens[k] + 1 <= avail) sum += lens[k++];
    *bytes = uint32_t(sum);
    return k;
  }

  template <typename A, typename V>
  static void WaitFor(A& a, V expected) {
    for (unsigned spins = 0; a.load(std::memory_order_acquire) != expected; spins++) {
      if (spins > 64) std::this_thread::yield();
    }
  }

  // Moves the release head over every acknowledged slot in a row. Lock-free: ackers race with a CAS, and
  // one that lost re-reads and goes on from where the winner stopped.
  // seq_cst, so that of two ackers of adjacent records (one marking, one moving the release head or marking
  // too), one always sees what the other did.
  void Advance() {
    uint64_t r = releaseHead_.load(std::memory_order_seq_cst);
    for (;;) {
      const uint32_t from = SlotOf(r);
      const uint32_t to = claimHead_.load(std::memory_order_seq_cst);
      uint32_t e = from;
      while (e != to && slots_[e & mask_].done.load(std::memory_order_seq_cst) == e + 1) e++;
      if (e == from) return;
      // If another acker released these slots meanwhile, `end` may already be a producer's: the CAS fails.
      const uint32_t end = slots_[(e - 1) & mask_].end.load(std::memory_order_relaxed);
      if (releaseHead_.compare_exchange_weak(r, Pack(e, end), std::memory_order_seq_cst)) r = Pack(e, end);
    }
  }

  friend struct RingTestAccess;  // native/test/stress.cc

  const uint32_t cap_, mask_, arenaBytes_, amask_;
  std::unique_ptr<Slot[]> slots_;
  std::unique_ptr<uint8_t[]> arena_;
  alignas(kCacheLine) std::atomic<uint64_t> claimTail_{0};
  alignas(kCacheLine) std::atomic<uint64_t> commitTail_{0};
  alignas(kCacheLine) std::atomic<uint32_t> claimHead_{0};
  alignas(kCacheLine) std::atomic<uint64_t> releaseHead_{0};
  alignas(kCacheLine) Counters counters_;
};

}  // namespace eventlane
