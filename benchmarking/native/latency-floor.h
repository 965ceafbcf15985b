// The machine's latency floor for the benchmark's latency rows: the partition core driven by C++ threads
// only, no JS. The calling thread sends, and pushes each event as a record {i, sent} into partition
// i % consumers, as the addon's push does (reserve, copy, commit, wake):
// - at a constant rate (latency-sustained), open loop: event i is due at t0 + i / rate on steady_clock
//   (CLOCK_MONOTONIC), the thread waits for that time (spinning over the last 2 ms) and `sent` is that time;
// - or (rate 0, latency-burst) in one burst, back to back, each stamped with the clock just before its push.
// One consumer thread per partition pops them with the bounded spin-then-futex wait of the transport's worker
// threads (PopAny) and reads the clock first thing for each record. Whatever latency this shows is the
// machine's (scheduler, wake-ups, the hypervisor), not JavaScript's.
#pragma once

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../../native/src/affinity.h"
#include "../../native/src/core.h"

namespace eventlane {

struct FloorOptions {
  double rate = 10000;          // events per second, > 0; 0: one burst, back to back
  uint32_t count = 0;           // events
  uint32_t consumers = 1;       // partitions, one consumer thread each
  uint32_t spinUs = 0;          // a consumer spins this long on an empty ring before it sleeps (transport spinUs)
  uint32_t quietMs = 0;         // a burst: the consumers idle this long first (latency-run.ts QUIET_BEFORE_BURST_MS)
  std::vector<int> cpus;        // empty, or: sender on cpus[0], consumer k on cpus[1 + k % (cpus.size() - 1)]
  uint32_t timeoutMs = 10000;   // for every event to arrive after the last send (and for room in a full ring)
};

struct FloorResult {
  std::vector<double> latencyNs;  // [i]: event i, now - intended (NaN if it never arrived)
  uint64_t received = 0;          // events popped, duplicates included
  uint64_t unique = 0;            // distinct events popped
  double windowNs = 0;            // from the first send to the last arrival
  std::string error;              // non-empty: the run failed, and why
};

class LatencyFloor {
 public:
  // The transport's defaults (transports/native/config.ts): 16,384 events and 128 bytes each per ring.
  static constexpr uint32_t kCapacity = 16384;
  static constexpr uint32_t kArenaBytes = kCapacity * 128;
  static constexpr uint32_t kWaitUs = 20000;  // a worker thread's bounded wait (thread-start.ts WORKER_WAIT_US)
  static constexpr uint32_t kMaxPop = 64;

  explicit LatencyFloor(const FloorOptions& o)
      : o_(o), core_(kCapacity, kArenaBytes), seen_(o.count, 0), sentNs_(o.count, 0) {
    lane_ = core_.Use(core_.CreateLane(o.consumers));
    result_.latencyNs.assign(o.count, std::numeric_limits<double>::quiet_NaN());
  }

  // Blocks the calling thread (the sender) for about count / rate seconds (a burst: until all arrived).
  FloorResult Run() {
    {
      Joiner joiner(this);  // stops and joins the consumers on every way out, exceptions included
      for (uint32_t k = 0; k < o_.consumers; k++) threads_.emplace_back(&LatencyFloor::Consume, this, k);
      while (ready_.load(std::memory_order_acquire) < o_.consumers) std::this_thread::yield();
      if (!Failed()) {
        SenderPin pin(this);
        if (!Failed()) Send();
      }
      if (!Failed()) AwaitArrivals();
    }
    result_.received = received_.load();
    result_.unique = arrived_.load();
    // The threads are joined: sentNs_ (the sender's) and latencyNs (the consumers') are all visible here.
    double last = 0;
    for (uint32_t i = 0; i < o_.count; i++) {
      const double at = double(sentNs_[i] - sentNs_[0]) + result_.latencyNs[i];
      if (at > last) last = at;  // NaN (never arrived) compares false
    }
    result_.windowNs = last;
    const uint64_t bad = bad_.load();
    if (result_.error.empty() && bad > 0) result_.error = std::to_string(bad) + " records popped from a partition they were not pushed to";
    return std::move(result_);
  }

 private:
  struct Record {
    uint64_t index;
    int64_t dueNs;
  };

  struct Joiner {
    explicit Joiner(LatencyFloor* f) : f(f) {}
    ~Joiner() {
      f->stop_.store(true, std::memory_order_release);
      f->core_.Close();  // wakes every consumer asleep in the core
      for (auto& t : f->threads_) t.join();
    }
    LatencyFloor* f;
  };

  // Pins the calling thread to cpus[0] for the run, and gives it back the CPUs it had.
  struct SenderPin {
    explicit SenderPin(LatencyFloor* f) : f(f) {
      if (f->o_.cpus.empty()) return;
      saved = ThreadCpus();
      f->Fail(SetThreadCpus({f->o_.cpus[0]}), "sender thread");
    }
    ~SenderPin() {
      if (!saved.empty()) SetThreadCpus(saved);
    }
    LatencyFloor* f;
    std::vector<int> saved;
  };

  static int64_t NowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  bool Failed() {
    std::lock_guard<std::mutex> lock(errorMu_);
    return !result_.error.empty();
  }

  // Keeps the first error: `why` empty is no error.
  void Fail(const std::string& why, const std::string& where) {
    if (why.empty()) return;
    std::lock_guard<std::mutex> lock(errorMu_);
    if (result_.error.empty()) result_.error = where + ": " + why;
  }

  void Consume(uint32_t part) {
    if (!o_.cpus.empty()) {
      const size_t n = o_.cpus.size() - 1;
      Fail(SetThreadCpus({o_.cpus[1 + part % n]}), "consumer thread " + std::to_string(part));
    }
    ready_.fetch_add(1, std::memory_order_release);
    std::vector<uint32_t> offs(kMaxPop + 1);
    uint32_t which = 0;
    // A record's bytes are its UTF-16 length too (Send), so offs are byte offsets into the joined segments.
    auto emit = [&](const uint8_t* a, size_t na, const uint8_t* b, size_t, uint32_t k) {
      for (uint32_t j = 0; j < k; j++) {
        const int64_t now = NowNs();
        Record r;
        const uint32_t off = offs[j];
        std::memcpy(&r, off < na ? a + off : b + (off - na), sizeof r);
        Arrived(part, r, now);
      }
    };
    while (!stop_.load(std::memory_order_acquire)) {
      PopAny(core_, *lane_, &part, 1, 0, kMaxPop, kWaitUs, o_.spinUs, &which, emit, offs.data());
    }
  }

  // On the consumer thread of `part`, the only one that pops it: seen_[i] of its records is its own.
  void Arrived(uint32_t part, const Record& r, int64_t now) {
    if (r.index >= o_.count || r.index % o_.consumers != part) {
      bad_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    received_.fetch_add(1, std::memory_order_relaxed);
    if (seen_[r.index]) return;  // a duplicate: counted in received_ only
    seen_[r.index] = 1;
    result_.latencyNs[r.index] = double(now - r.dueNs);
    arrived_.fetch_add(1, std::memory_order_release);
  }

  void Send() {
    const int64_t timeoutNs = int64_t(o_.timeoutMs) * 1000000;
    const uint32_t len = sizeof(Record);
    const bool burst = o_.rate == 0;
    // Before a burst the consumers are left idle, asleep in their wait (the JS rows' quiet before a burst).
    if (burst && o_.quietMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o_.quietMs));
    const int64_t t0 = NowNs();
    for (uint64_t i = 0; i < o_.count; i++) {
      int64_t due;
      if (burst) {
        due = NowNs();
      } else {
        due = t0 + std::llround(double(i) * 1e9 / o_.rate);
        WaitUntil(due);
      }
      const uint32_t p = uint32_t(i % o_.consumers);
      Ring& ring = lane_->ring(p);
      Reservation res;
      while (!ring.Reserve(&len, &len, 1, true, &res)) {
        if (NowNs() - due > timeoutNs) return Fail("ring stayed full for " + std::to_string(o_.timeoutMs) + " ms", "partition " + std::to_string(p));
        std::this_thread::yield();
      }
      sentNs_[i] = due;
      const Record r{i, due};
      std::memcpy(ring.arena() + res.dst, &r, len);
      ring.Commit(res);
      lane_->Notify(p);
    }
  }

  static void WaitUntil(int64_t due) {
    for (;;) {
      const int64_t left = due - NowNs();
      if (left <= 0) return;
      if (left > 2000000) std::this_thread::sleep_for(std::chrono::nanoseconds(left - 1000000));
      else CpuRelax();
    }
  }

  void AwaitArrivals() {
    const int64_t deadline = NowNs() + int64_t(o_.timeoutMs) * 1000000;
    while (arrived_.load(std::memory_order_acquire) < o_.count) {
      if (NowNs() > deadline) {
        return Fail(std::to_string(arrived_.load()) + " of " + std::to_string(o_.count) + " events arrived within " +
                        std::to_string(o_.timeoutMs) + " ms of the last send",
                    "timed out");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  }

  const FloorOptions o_;
  Core core_;
  Core::LaneRef lane_;  // after core_: let go before the core goes
  std::vector<uint8_t> seen_;
  std::vector<int64_t> sentNs_;  // [i]: event i's send time (its due time when paced), written by the sender only
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<uint32_t> ready_{0};
  std::atomic<uint64_t> arrived_{0}, received_{0}, bad_{0};
  std::mutex errorMu_;
  FloorResult result_;
};

}  // namespace eventlane
