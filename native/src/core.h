// A core: lanes of partition rings shared by every thread of the process, with a wake-up word per lane.
// Cores live in a process-wide registry by id, so a worker thread attaches to the rings its parent made.
#pragma once

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ring.h"

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#endif

namespace eventlane {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Consumers spin briefly, then sleep on a futex; producers wake only when someone sleeps.
class Notifier {
 public:
  uint32_t Seq() const { return seq_.load(std::memory_order_seq_cst); }
  void Notify() {
    seq_.fetch_add(1, std::memory_order_seq_cst);
    if (waiters_.load(std::memory_order_seq_cst) > 0) Wake();
  }
  void Wait(uint32_t expected, uint32_t timeoutUs) {
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    if (seq_.load(std::memory_order_seq_cst) == expected) Sleep(expected, timeoutUs);
    waiters_.fetch_sub(1, std::memory_order_seq_cst);
  }
  void Wake() {
#if defined(__linux__)
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&seq_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
#endif
  }

 private:
  void Sleep(uint32_t expected, uint32_t timeoutUs) {
#if defined(__linux__)
    struct timespec ts;
    ts.tv_sec = timeoutUs / 1000000;
    ts.tv_nsec = long(timeoutUs % 1000000) * 1000;
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&seq_), FUTEX_WAIT_PRIVATE, expected, &ts, nullptr, 0);
#else
    std::this_thread::sleep_for(std::chrono::microseconds(timeoutUs < 200 ? timeoutUs : 200));
#endif
  }
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "futex word must be a plain uint32");
  alignas(kCacheLine) std::atomic<uint32_t> seq_{0};
  alignas(kCacheLine) std::atomic<uint32_t> waiters_{0};
};

// Rings of one (type, group), with a wake-up word per ring (consumers of one partition sleep there, so a
// push wakes only them) and one for the lane (consumers of several partitions, and close).
class Lane {
 public:
  Lane(uint32_t partitions, uint32_t capacity, uint32_t arenaBytes) {
    rings_.reserve(partitions);
    ringNotifiers_.reserve(partitions);
    for (uint32_t p = 0; p < partitions; p++) {
      rings_.emplace_back(new Ring(capacity, arenaBytes));
      ringNotifiers_.emplace_back(new Notifier());
    }
  }
  uint32_t partitions() const { return uint32_t(rings_.size()); }
  Ring& ring(uint32_t p) { return *rings_[p]; }
  Notifier& notifier() { return notifier_; }
  Notifier& notifier(uint32_t p) { return *ringNotifiers_[p]; }
  // After a push to partition p.
  void Notify(uint32_t p) {
    ringNotifiers_[p]->Notify();
    notifier_.Notify();
  }
  // Wakes everyone (close, rebalance, free).
  void NotifyAll() {
    for (auto& n : ringNotifiers_) n->Notify();
    notifier_.Notify();
  }
  // Freed (Core::FreeLane): a pop waiting here stops waiting; it goes when its last user lets go.
  bool retired() const { return retired_.load(std::memory_order_acquire); }
  void Retire() {
    retired_.store(true, std::memory_order_release);
    NotifyAll();
  }
  // Bytes of its rings (slots and arenas): what freeing it gives back.
  static uint64_t BytesOf(uint32_t partitions, uint32_t capacity, uint32_t arenaBytes) {
    return uint64_t(partitions) * (uint64_t(capacity) * sizeof(Slot) + arenaBytes);
  }

 private:
  std::vector<std::unique_ptr<Ring>> rings_;
  std::vector<std::unique_ptr<Notifier>> ringNotifiers_;
  Notifier notifier_;
  std::atomic<bool> retired_{false};
};

// Lanes of a core, by id, freed one at a time while any thread may be using them (lock-free lookups).
//
// An id is a slot index (low kLaneIndexBits bits) and that slot's generation (above): freeing a lane moves
// its slot to the next generation, so an id kept after its lane was freed names nothing, even once the slot
// holds another lane. Ids stay below 2^44, exact as JavaScript numbers.
//
// Each slot has one 64-bit word: generation (32 bits) | users (31 bits) | retired (1 bit). A thread uses a
// lane only through a LaneRef (Core::Use): a CAS adds a user when the generation matches and the slot is not
// retired, and the LaneRef's end takes it off; one pair of atomic RMWs per binding call, not per event.
// FreeLane sets `retired` (new uses fail from then on) and wakes the lane's sleepers; whoever takes the last
// user off a retired slot (FreeLane itself when nobody else uses it) deletes the lane, then moves the slot
// to the next generation, still retired, and puts it on the free list; CreateLane clears `retired` once the
// slot holds its new lane. A retired slot takes no users, so the deleter is the only thread that can reach
// the lane; and the last user's RMW (acq_rel) comes after every other user's (release) in the word's
// modification order, so their accesses to the lane happen before its deletion.
class Core {
 public:
  static constexpr uint32_t kMaxLanes = 4096;  // alive at once
  static constexpr uint32_t kLaneIndexBits = 12;
  static_assert((1u << kLaneIndexBits) == kMaxLanes, "an id's index bits address every slot");
  static constexpr uint64_t kNoLane = ~uint64_t(0);

  // A counted use of a lane (see above): the lane stays allocated while it exists. Move-only.
  class LaneRef {
   public:
    LaneRef() = default;
    LaneRef(LaneRef&& o) noexcept : core_(o.core_), index_(o.index_), lane_(o.lane_) { o.lane_ = nullptr; }
    LaneRef& operator=(LaneRef&& o) noexcept {
      if (this != &o) {
        Reset();
        core_ = o.core_, index_ = o.index_, lane_ = o.lane_;
        o.lane_ = nullptr;
      }
      return *this;
    }
    LaneRef(const LaneRef&) = delete;
    LaneRef& operator=(const LaneRef&) = delete;
    ~LaneRef() { Reset(); }
    explicit operator bool() const { return lane_ != nullptr; }
    Lane* get() const { return lane_; }
    Lane* operator->() const { return lane_; }
    Lane& operator*() const { return *lane_; }
    void Reset() {
      if (lane_ != nullptr) core_->Unuse(index_);
      lane_ = nullptr;
    }

   private:
    friend class Core;
    LaneRef(Core* core, uint32_t index, Lane* lane) : core_(core), index_(index), lane_(lane) {}
    Core* core_ = nullptr;
    uint32_t index_ = 0;
    Lane* lane_ = nullptr;
  };

  Core(uint32_t capacity, uint32_t arenaBytes)
      : capacity_(capacity), arenaBytes_(arenaBytes), slots_(new LaneSlot[kMaxLanes]) {
    for (uint32_t i = 0; i < kMaxLanes; i++) {
      LaneSlot& s = slots_[i];
      s.word.store(kRetired, std::memory_order_relaxed);  // generation 0, empty
      s.lane.store(nullptr, std::memory_order_relaxed);
    }
  }
  // No LaneRef outlives the core (every holder also holds the core).
  ~Core() {
    for (uint32_t i = 0; i < kMaxLanes; i++) delete slots_[i].lane.load(std::memory_order_acquire);
  }

  uint32_t capacity() const { return capacity_; }
  uint32_t arenaBytes() const { return arenaBytes_; }
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  // Lanes allocated now (freed ones still in use included) and the bytes of their rings.
  uint32_t liveLanes() const { return liveLanes_.load(std::memory_order_relaxed); }
  uint64_t laneBytes() const { return laneBytes_.load(std::memory_order_relaxed); }

  // Returns the lane id, or kNoLane when kMaxLanes lanes are alive. Throws std::bad_alloc (nothing taken).
  uint64_t CreateLane(uint32_t partitions) {
    // The slot first (so a refused lane allocates nothing), then the rings outside the lock (they may take
    // long to zero). The slot stays retired and userless meanwhile: nothing else can reach it.
    uint32_t index;
    {
      std::lock_guard<std::mutex> lock(createMu_);  // creating and freeing are rare; lookups are lock-free
      if (!free_.empty()) {
        index = free_.back();
        free_.pop_back();
      } else if (used_ < kMaxLanes) {
        index = used_++;
      } else {
        return kNoLane;
      }
    }
    std::unique_ptr<Lane> lane;
    try {
      lane.reset(new Lane(partitions, capacity_, arenaBytes_));
    } catch (...) {
      std::lock_guard<std::mutex> lock(createMu_);
      free_.push_back(index);  // the slot back, unchanged
      throw;
    }
    LaneSlot& s = slots_[index];
    const uint64_t gen = s.word.load(std::memory_order_relaxed) >> 32;  // retired and userless: nobody else writes it
    s.lane.store(lane.release(), std::memory_order_relaxed);
    liveLanes_.fetch_add(1, std::memory_order_relaxed);
    laneBytes_.fetch_add(Lane::BytesOf(partitions, capacity_, arenaBytes_), std::memory_order_relaxed);
    s.word.store(gen << 32, std::memory_order_release);  // publishes the lane: Use() may take it from here on
    return (gen << kLaneIndexBits) | index;
  }

  // A counted use of lane `id`; empty when there is no such lane (never was, or freed).
  LaneRef Use(uint64_t id) {
    if (id >= (uint64_t(1) << (32 + kLaneIndexBits))) return LaneRef();
    return UseSlot(uint32_t(id & (kMaxLanes - 1)), true, uint32_t(id >> kLaneIndexBits));
  }

  // Frees lane `id`: no new use of it succeeds from now on, pops waiting in it return, and its rings are
  // deleted once the last use ends (at once when there is none). False when there is no such lane.
  bool FreeLane(uint64_t id) {
    LaneRef ref = Use(id);  // held across the retire, so the deleter is whichever use ends last (this one at the latest)
    if (!ref) return false;
    LaneSlot& s = slots_[ref.index_];
    uint64_t w = s.word.load(std::memory_order_relaxed);
    do {
      if (w & kRetired) return false;  // another FreeLane got there first
    } while (!s.word.compare_exchange_weak(w, w | kRetired, std::memory_order_acq_rel, std::memory_order_relaxed));
    ref->Retire();
    return true;
  }

  void Close() {
    closed_.store(true, std::memory_order_release);
    for (uint32_t i = 0; i < kMaxLanes; i++) {
      LaneRef ref = UseSlot(i, false, 0);
      if (ref) ref->NotifyAll();
    }
  }

 private:
  static constexpr uint64_t kRetired = 1;
  static constexpr uint64_t kUser = 2;
  static constexpr uint64_t kUserMask = 0xFFFFFFFEull;

  struct alignas(kCacheLine) LaneSlot {
    std::atomic<uint64_t> word;
    std::atomic<Lane*> lane;
  };

  // A use of slot `index` when it holds a lane not retired (of generation `gen` when `checkGen`).
  LaneRef UseSlot(uint32_t index, bool checkGen, uint32_t gen) {
    LaneSlot& s = slots_[index];
    uint64_t w = s.word.load(std::memory_order_acquire);
    for (;;) {
      if ((w & kRetired) || (checkGen && uint32_t(w >> 32) != gen)) return LaneRef();
      if ((w & kUserMask) == kUserMask) return LaneRef();  // 2^31 - 1 uses at once: refused rather than overflow
      if (s.word.compare_exchange_weak(w, w + kUser, std::memory_order_acquire, std::memory_order_acquire)) break;
    }
    return LaneRef(this, index, s.lane.load(std::memory_order_relaxed));  // ordered by the CAS's acquire
  }

  // Ends a use of slot `index`; the last use of a retired lane deletes it.
  void Unuse(uint32_t index) {
    LaneSlot& s = slots_[index];
    const uint64_t w = s.word.fetch_sub(kUser, std::memory_order_acq_rel);
    if ((w & kRetired) && (w & kUserMask) == kUser) Reclaim(index, w >> 32);
  }

  // Slot `index` is retired with no user: nobody else can reach its lane.
  void Reclaim(uint32_t index, uint64_t gen) {
    LaneSlot& s = slots_[index];
    Lane* lane = s.lane.exchange(nullptr, std::memory_order_relaxed);
    const uint64_t bytes = Lane::BytesOf(lane->partitions(), capacity_, arenaBytes_);
    delete lane;
    laneBytes_.fetch_sub(bytes, std::memory_order_relaxed);
    liveLanes_.fetch_sub(1, std::memory_order_relaxed);
    s.word.store(((gen + 1) & 0xFFFFFFFFull) << 32 | kRetired, std::memory_order_release);  // empty, next generation
    std::lock_guard<std::mutex> lock(createMu_);
    free_.push_back(index);
  }

  const uint32_t capacity_, arenaBytes_;
  std::atomic<bool> closed_{false};
  std::mutex createMu_;
  uint32_t used_ = 0;           // slots ever used (under createMu_)
  std::vector<uint32_t> free_;  // slots freed, for reuse (under createMu_)
  std::atomic<uint32_t> liveLanes_{0};
  std::atomic<uint64_t> laneBytes_{0};
  std::unique_ptr<LaneSlot[]> slots_;  // on the heap (256 KiB): a Core may live on a thread's stack
};

// Process-wide registry: id -> core, so any thread (any Node environment) can attach.
class Registry {
 public:
  static Registry& Get() {
    static Registry* r = new Registry();  // never destroyed: worker environments may outlive main's statics
    return *r;
  }
  uint32_t Add(std::shared_ptr<Core> core) {
    std::lock_guard<std::mutex> lock(mu_);
    uint32_t id = ++next_;
    map_[id] = std::move(core);
    return id;
  }
  std::shared_ptr<Core> Find(uint32_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(id);
    return it == map_.end() ? nullptr : it->second;
  }
  void Remove(uint32_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    map_.erase(id);
  }

 private:
  std::mutex mu_;
  uint32_t next_ = 0;
  std::unordered_map<uint32_t, std::shared_ptr<Core>> map_;
};

// Pops from the first non-empty partition in `parts` (round-robin from `start`); when all are empty and
// waitUs > 0, spins for spinUs, then sleeps on the lane's futex, until data, close, the lane freed, or the deadline. With
// `hold`, the records stay in the ring until acknowledged at `*first` (Ring::Ack), marked as `holder`'s.
template <typename Emit>
uint32_t PopAny(Core& core, Lane& lane, const uint32_t* parts, uint32_t nParts, uint32_t start, uint32_t max,
                uint32_t waitUs, uint32_t spinUs, uint32_t* which, Emit&& emit, uint32_t* charOffs = nullptr,
                bool hold = false, uint32_t* first = nullptr, uint32_t holder = 0) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point deadline{}, spinUntil{};
  bool timed = false;
  Notifier& notifier = nParts == 1 ? lane.notifier(parts[0]) : lane.notifier();
  for (unsigned round = 0;; round++) {
    const uint32_t seq = notifier.Seq();
    for (uint32_t i = 0; i < nParts; i++) {
      const uint32_t p = parts[(start + i) % nParts];
      *which = p;  // visible to emit
      uint32_t k = lane.ring(p).Pop(max, emit, charOffs, hold, first, holder);
      if (k > 0) return k;
    }
    if (waitUs == 0 || core.closed() || lane.retired()) return 0;
    const auto now = Clock::now();
    if (!timed) {
      timed = true;
      deadline = now + std::chrono::microseconds(waitUs);
      spinUntil = now + std::chrono::microseconds(spinUs);
    }
    if (now >= deadline) return 0;
    if (now < spinUntil) {
      CpuRelax();  // no sched_yield: a yielding spinner loses its wake-up priority and waits a whole tick
      continue;
    }
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now).count();
    notifier.Wait(seq, uint32_t(left > 0 ? left : 1));
  }
}

}  // namespace eventlane
