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
  // Wakes everyone (close, rebalance).
  void NotifyAll() {
    for (auto& n : ringNotifiers_) n->Notify();
    notifier_.Notify();
  }

 private:
  std::vector<std::unique_ptr<Ring>> rings_;
  std::vector<std::unique_ptr<Notifier>> ringNotifiers_;
  Notifier notifier_;
};

class Core {
 public:
  static constexpr uint32_t kMaxLanes = 4096;

  Core(uint32_t capacity, uint32_t arenaBytes) : capacity_(capacity), arenaBytes_(arenaBytes) {
    for (auto& l : lanes_) l.store(nullptr, std::memory_order_relaxed);
  }
  ~Core() {
    for (auto& l : lanes_) delete l.load(std::memory_order_acquire);
  }

  uint32_t capacity() const { return capacity_; }
  uint32_t arenaBytes() const { return arenaBytes_; }
  bool closed() const { return closed_.load(std::memory_order_acquire); }

  // Returns the lane id, or -1 when kMaxLanes are in use.
  int CreateLane(uint32_t partitions) {
    std::lock_guard<std::mutex> lock(createMu_);  // lane creation is rare; lookups are lock-free
    if (laneCount_ >= kMaxLanes) return -1;
    lanes_[laneCount_].store(new Lane(partitions, capacity_, arenaBytes_), std::memory_order_release);
    return int(laneCount_++);
  }

  Lane* lane(uint32_t id) { return id < kMaxLanes ? lanes_[id].load(std::memory_order_acquire) : nullptr; }

  void Close() {
    closed_.store(true, std::memory_order_release);
    for (auto& l : lanes_) {
      Lane* lane = l.load(std::memory_order_acquire);
      if (lane) lane->NotifyAll();
    }
  }

 private:
  const uint32_t capacity_, arenaBytes_;
  std::atomic<bool> closed_{false};
  std::mutex createMu_;
  uint32_t laneCount_ = 0;
  std::atomic<Lane*> lanes_[kMaxLanes];
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
// waitUs > 0, spins for spinUs, then sleeps on the lane's futex, until data, close, or the deadline. With
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
    if (waitUs == 0 || core.closed()) return 0;
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
