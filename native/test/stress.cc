// Stress test of the partition core, run under ThreadSanitizer and AddressSanitizer by
// scripts/native-sanitize.sh. Exits non-zero on any lost, duplicated or out-of-order event.
//
// Phase 1 (block): P producers share R rings (multi-producer claims); each ring has one consumer at a time
//   (C consumer threads own rings r % C). Every (producer, key) sequence must arrive exactly once, in order.
// Phase 1b: every consumer pops every ring (head claims race): every event exactly once.
// Phase 2 (drop-oldest): producers evict while consumers pop; what arrives must be in order without
//   duplicates, and pushed == popped + droppedOldest exactly.
// Phase 1c: as 1 and 1b, with consumers holding what they pop and acknowledging it later, out of order.
// Phase 3 (drop-newest / error counters): single thread, exact counter arithmetic.
// Phase 4: a consumer dies holding records; TakeHeld hands them back, none lost.
// Phase 5 (try-publish probe): one producer, as the bus's thread is, asks Fits before each all-or-nothing
//   Reserve while consumers pop (and hold): whenever Fits says yes the Reserve succeeds; exactly once, in order.
// Phases 1, 1c, 2 and 5 also read Size() and Held() of every ring all along: never above the capacity.
// Phase 6 (late acks): TakeHeld takes records consumers still hold, and their acks land later, after the ring
//   went round (one thread, operations in random order): a late ack changes nothing. Pops are marked with one
//   of three holders; TakeHeld of one holder takes exactly that holder's records, TakeHeld(0) everyone's.
// Phase 7: TakeHeld meets a slot that shows the offset of one record and the length of another: it reads
//   nothing outside the arena and skips that record.
// Phase 9 (StreamCopy, the arena copy of large batches): every size up to a few hundred bytes past the
//   threshold, at every source and destination alignment, between guard bytes: exact copy, guards untouched.
//   The sanitizer script builds this file with a low EVENTLANE_STREAM_COPY_MIN, so the concurrent phases
//   above copy their batches with streaming stores too.
// Phase 10 (lanes freed while in use): lanes are freed and created again (their slots reused under a new
//   generation) while producers push to them and consumers pop (holding and acknowledging) them, each by
//   an id read from a shared table that the churn thread swaps: every use goes through Core::Use. A record
//   carries the id it was pushed by; a pop by id X must only ever find records pushed by id X (a stale id
//   reaching the lane a later CreateLane put in its slot would break that). A freed id is never usable again;
//   a pop asleep in a lane returns when it is freed; Close meets lanes being freed; at the end no lane and
//   no ring byte is left. ThreadSanitizer sees every access against the deletion; AddressSanitizer any use
//   after free or leak. Then 4,096 lanes alive at once: the next is refused, until one is freed.
// Phase 8 (latency floor, benchmarking/native/latency-floor.h): the benchmark's C++ sender and consumer threads, short runs with
//   1 and 4 consumers, sleeping and spinning, pinned where 2+ CPUs are allowed: every event arrives once, each
//   latency finite and >= 0.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../src/core.h"
#include "../../benchmarking/native/latency-floor.h"

using namespace eventlane;

// Reaches a ring's slots, to set up what TakeHeld can meet while a producer reuses a slot.
namespace eventlane {
struct RingTestAccess {
  static Slot& At(Ring& r, uint32_t pos) { return r.slots_[pos & r.mask_]; }
};
}  // namespace eventlane

namespace {

std::atomic<int> failures{0};

void Fail(const char* what, long a, long b) {
  if (failures.fetch_add(1) < 20) std::fprintf(stderr, "FAIL: %s (%ld, %ld)\n", what, a, b);
}

struct Config {
  int producers, consumers, rings, keys, perProducer;
  uint32_t capacity, arenaBytes;
  int mode;
};

// Records: "p:k:seq:<padding>," — variable length so batches wrap the arena at odd places.
std::string Record(int p, int k, long seq, std::mt19937& rng) {
  std::string s = std::to_string(p) + ":" + std::to_string(k) + ":" + std::to_string(seq) + ":";
  s.append(rng() % 40, 'x');
  s += ',';
  return s;
}

// Parses a popped span: records separated by ',' with optional ' ' between batches.
template <typename F>
void ParseSpan(const uint8_t* a, size_t n, F&& onRecord) {
  size_t i = 0;
  while (i < n) {
    while (i < n && a[i] == ' ') i++;
    if (i >= n) break;
    long v[3] = {0, 0, 0};
    for (int f = 0; f < 3; f++) {
      long x = 0;
      while (i < n && a[i] != ':') x = x * 10 + (a[i++] - '0');
      v[f] = x;
      i++;  // ':'
    }
    while (i < n && a[i] != ',') {
      if (a[i] != 'x') Fail("corrupt padding byte", long(a[i]), long(i));
      i++;
    }
    i++;  // ','
    onRecord(int(v[0]), int(v[1]), v[2]);
  }
}

// Pushes one batch into ring `ring` as room allows, as the addon does: reserve, copy into the arena,
// commit, wake. `onFull(remaining)` runs whenever nothing could be reserved (wait, evict, ...).
template <typename OnFull>
void PushBatch(Lane& lane, uint32_t ring, const std::vector<uint32_t>& lens, const std::string& text, bool allOrNothing, bool probe, OnFull&& onFull) {
  Ring& r = lane.ring(ring);
  uint32_t done = 0;
  size_t off = 0;
  while (done < lens.size()) {
    Reservation res;
    const uint32_t left = uint32_t(lens.size() - done);
    if (probe && !r.Fits(lens.data() + done, left)) {
      onFull(r, left);
      continue;
    }
    if (!r.Reserve(lens.data() + done, lens.data() + done, left, allOrNothing, &res)) {
      if (probe) Fail("Fits said yes, then Reserve refused (one producer)", long(left), 0);
      onFull(r, left);
      continue;
    }
    r.Fill(res, reinterpret_cast<const uint8_t*>(text.data()) + off);
    r.Commit(res);
    lane.Notify(ring);
    done += res.count;
    off += res.bytes;
  }
}

// Pops batches of at most `max` from `parts` (round-robin from `start`) and hands every record to
// `onRecord`, until the producers are done and those rings are empty. `which` holds the ring of the
// records being handed over (for callers that check it).
// With `hold`, popped batches stay in their rings and are acknowledged later, in random order (up to four
// held at once, all of them whenever a pop finds nothing), as worker threads do when their handlers finish.
template <typename F>
void DrainUntilEmpty(Core& core, Lane& lane, const std::vector<uint32_t>& parts, uint32_t start, uint32_t max,
                     uint32_t waitUs, uint32_t spinUs, const std::atomic<int>& producersLeft, uint32_t& which,
                     F&& onRecord, bool hold = false) {
  struct Held {
    uint32_t ring, first, count;
  };
  std::vector<Held> held;
  std::mt19937 rng(start * 7919 + 1);
  for (;;) {
    const bool drained = producersLeft.load() == 0;
    uint32_t first = 0;
    const uint32_t k = PopAny(core, lane, parts.data(), uint32_t(parts.size()), start++, max, waitUs, spinUs, &which,
                              [&](const uint8_t* a, size_t na, const uint8_t* b, size_t nb, uint32_t) {
                                ParseSpan(a, na, onRecord);
                                if (b) ParseSpan(b, nb, onRecord);
                              },
                              nullptr, hold, &first);
    if (k > 0 && hold) held.push_back({which, first, k});
    while (!held.empty() && (held.size() > 4 || k == 0)) {
      const size_t i = rng() % held.size();
      lane.ring(held[i].ring).Ack(held[i].first, held[i].count);
      held[i] = held.back();
      held.pop_back();
    }
    if (k == 0 && drained) {
      bool empty = true;
      for (uint32_t r : parts) empty = empty && lane.ring(r).Size() == 0;
      if (empty) return;
    }
  }
}

long Run(const Config& cfg, bool strictOrderNoLoss, bool hold = false) {
  Core core(cfg.capacity, cfg.arenaBytes);
  Core::LaneRef ref = core.Use(core.CreateLane(uint32_t(cfg.rings)));
  Lane& lane = *ref;
  std::atomic<int> producersLeft{cfg.producers};
  // last[p][k]: last sequence seen (consumers of a key's ring are one thread at a time).
  std::vector<std::vector<long>> last(cfg.producers, std::vector<long>(cfg.keys, -1));
  std::atomic<long> received{0};

  std::vector<std::thread> threads;
  for (int p = 0; p < cfg.producers; p++) {
    threads.emplace_back([&, p] {
      std::mt19937 rng(1234 + p);
      std::vector<long> seq(cfg.keys, 0);
      int sent = 0;
      while (sent < cfg.perProducer) {
        // One batch for one ring: keys that map to the ring.
        const int ring = int(rng() % cfg.rings);
        const int batch = 1 + int(rng() % 64);
        std::string text;
        std::vector<uint32_t> lens;
        for (int b = 0; b < batch && sent < cfg.perProducer; b++) {
          int k = int(rng() % (cfg.keys / cfg.rings)) * cfg.rings + ring;  // k % rings == ring
          std::string r = Record(p, k, seq[k]++, rng);
          lens.push_back(uint32_t(r.size()));
          text += r;
          sent++;
        }
        PushBatch(lane, uint32_t(ring), lens, text, cfg.mode == kAllOrNothing || cfg.mode == kProbe, cfg.mode == kProbe, [&](Ring& r, uint32_t remaining) {
          // drop-oldest makes room by evicting; block waits for consumers
          if (cfg.mode != kEvictOldest || r.Evict(remaining) == 0) std::this_thread::yield();
        });
      }
      producersLeft.fetch_sub(1);
      lane.NotifyAll();
    });
  }
  for (int c = 0; c < cfg.consumers; c++) {
    threads.emplace_back([&, c] {
      std::vector<uint32_t> parts;
      for (int r = c; r < cfg.rings; r += cfg.consumers) parts.push_back(uint32_t(r));
      uint32_t which = 0;
      auto onRecord = [&](int p, int k, long s) {
        if (p < 0 || p >= cfg.producers || k < 0 || k >= cfg.keys) return Fail("bad record", p, k);
        if (uint32_t(k % cfg.rings) != which) Fail("record in the wrong ring", k, which);
        long& l = last[p][k];
        if (strictOrderNoLoss ? s != l + 1 : s <= l) Fail(strictOrderNoLoss ? "gap, duplicate or reorder" : "duplicate or reorder", l, s);
        l = s;
        received.fetch_add(1, std::memory_order_relaxed);
      };
      DrainUntilEmpty(core, lane, parts, uint32_t(c), 97, 2000, 20, producersLeft, which, onRecord, hold);
    });
  }
  // Meanwhile, snapshots of every ring never report more waiting or held records than it has slots.
  std::atomic<bool> stop{false};
  std::thread monitor([&] {
    while (!stop.load()) {
      for (int r = 0; r < cfg.rings; r++) {
        const uint32_t size = lane.ring(uint32_t(r)).Size(), held = lane.ring(uint32_t(r)).Held();
        if (size > cfg.capacity || held > cfg.capacity) Fail("snapshot beyond the capacity (size, held)", long(size), long(held));
      }
    }
  });
  for (auto& t : threads) t.join();
  stop.store(true);
  monitor.join();

  uint64_t pushed = 0, popped = 0, dropped = 0;
  for (int r = 0; r < cfg.rings; r++) {
    Counters& c = lane.ring(uint32_t(r)).counters();
    pushed += c.pushed.load();
    popped += c.popped.load();
    dropped += c.droppedOldest.load();
  }
  const long total = long(cfg.producers) * cfg.perProducer;
  if (long(pushed) != total) Fail("pushed counter", long(pushed), total);
  if (long(popped + dropped) != total) Fail("popped + droppedOldest != pushed", long(popped + dropped), total);
  if (received.load() != long(popped)) Fail("received != popped counter", received.load(), long(popped));
  if (strictOrderNoLoss) {
    if (received.load() != total) Fail("lost events", received.load(), total);
  }
  std::printf("  producers=%d consumers=%d rings=%d: pushed=%llu popped=%llu droppedOldest=%llu\n", cfg.producers,
              cfg.consumers, cfg.rings, (unsigned long long)pushed, (unsigned long long)popped,
              (unsigned long long)dropped);
  return received.load();
}

// Phase 1b: every consumer pops from every ring (claims race at the head): exactly once, no order check.
void SharedConsumers(int producers, int consumers, int rings, int perProducer, bool hold = false) {
  Core core(128, 2048);
  Core::LaneRef ref = core.Use(core.CreateLane(uint32_t(rings)));
  Lane& lane = *ref;
  std::vector<std::atomic<uint8_t>> seen(size_t(producers) * perProducer);
  for (auto& x : seen) x.store(0);
  std::atomic<int> producersLeft{producers};
  std::atomic<long> received{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; p++) {
    threads.emplace_back([&, p] {
      std::mt19937 rng(99 + p);
      for (int i = 0; i < perProducer;) {
        const int ring = int(rng() % rings);
        std::string text;
        std::vector<uint32_t> lens;
        for (int b = 0; b < 16 && i < perProducer; b++, i++) {
          std::string r = Record(p, 0, i, rng);
          lens.push_back(uint32_t(r.size()));
          text += r;
        }
        PushBatch(lane, uint32_t(ring), lens, text, false, false, [](Ring&, uint32_t) { std::this_thread::yield(); });
      }
      producersLeft.fetch_sub(1);
    });
  }
  std::vector<uint32_t> all;
  for (int r = 0; r < rings; r++) all.push_back(uint32_t(r));
  for (int c = 0; c < consumers; c++) {
    threads.emplace_back([&, c] {
      uint32_t which = 0;
      auto onRecord = [&](int p, int, long s) {
        if (p < 0 || p >= producers || s < 0 || s >= perProducer) return Fail("bad record (shared)", p, s);
        if (seen[size_t(p) * perProducer + size_t(s)].fetch_add(1) != 0) Fail("duplicate (shared consumers)", p, s);
        received.fetch_add(1);
      };
      DrainUntilEmpty(core, lane, all, uint32_t(c), 7, 1000, 0, producersLeft, which, onRecord, hold);
    });
  }
  for (auto& t : threads) t.join();
  const long total = long(producers) * perProducer;
  if (received.load() != total) Fail("lost events (shared consumers)", received.load(), total);
  std::printf("  producers=%d consumers=%d (all sharing %d rings): received=%ld of %ld\n", producers, consumers, rings,
              received.load(), total);
}

void Counters3() {
  Ring r(8, 1024);
  const char* rec = "abcdefg,";
  std::vector<uint32_t> lens(20, 8);
  std::string text;
  for (int i = 0; i < 20; i++) text += rec;
  Reservation res;
  // error (all or nothing): 20 records never fit 8 slots
  if (r.Reserve(lens.data(), lens.data(), 20, true, &res)) Fail("all-or-nothing accepted an oversized batch", 0, 0);
  // drop-newest: prefix of 8 fits
  if (!r.Reserve(lens.data(), lens.data(), 20, false, &res) || res.count != 8) Fail("partial reserve count", res.count, 8);
  std::memcpy(r.arena() + res.dst, text.data(), res.bytes);
  r.Commit(res);
  if (r.Size() != 8) Fail("size after commit", r.Size(), 8);
  if (r.Evict(3) != 3) Fail("evict count", 0, 3);
  if (r.counters().droppedOldest.load() != 3) Fail("droppedOldest counter", long(r.counters().droppedOldest.load()), 3);
  uint32_t got = r.Pop(100, [&](const uint8_t* a, size_t na, const uint8_t*, size_t, uint32_t k) {
    if (na != size_t(k) * 8) Fail("pop span", long(na), long(k) * 8);
    if (std::memcmp(a, rec, 8) != 0) Fail("pop bytes", 0, 0);
  });
  if (got != 5) Fail("pop count", got, 5);
  if (r.counters().pushed.load() != 8 || r.counters().popped.load() != 5) Fail("pushed/popped counters", 0, 0);
}

// Phase 4: a consumer dies holding records. It pops three batches with `hold` (as holder 1) and acknowledges
// only the first; TakeHeld of holder 2 takes nothing, and TakeHeld of holder 1 (while a producer keeps
// pushing) must return exactly the other two, in order, and a new consumer the rest: every record once, none lost.
void DeadConsumer(int total, bool report) {
  Core core(256, 8192);
  Core::LaneRef ref = core.Use(core.CreateLane(1));
  Lane& lane = *ref;
  Ring& ring = lane.ring(0);
  std::atomic<int> producersLeft{1};
  std::vector<long> got;
  auto parse = [&](const uint8_t* a, size_t n) { ParseSpan(a, n, [&](int, int, long s) { got.push_back(s); }); };
  std::thread producer([&] {
    std::mt19937 rng(7);
    for (int i = 0; i < total;) {
      std::string text;
      std::vector<uint32_t> lens;
      for (int b = 0; b < 10 && i < total; b++, i++) {
        std::string r = Record(0, 0, i, rng);
        lens.push_back(uint32_t(r.size()));
        text += r;
      }
      PushBatch(lane, 0, lens, text, false, false, [](Ring&, uint32_t) { std::this_thread::yield(); });
    }
    producersLeft.fetch_sub(1);
  });
  // The doomed consumer: waits for data, pops three batches, acknowledges the first, "dies".
  uint32_t firsts[3] = {0, 0, 0}, counts[3] = {0, 0, 0};
  for (int b = 0; b < 3;) {
    counts[b] = ring.Pop(
        7, [&](const uint8_t* a, size_t na, const uint8_t* c, size_t nc, uint32_t) { parse(a, na); if (c) parse(c, nc); }, nullptr,
        true, &firsts[b], 1);
    if (counts[b] > 0) b++;
    else std::this_thread::yield();
  }
  ring.Ack(firsts[0], counts[0]);
  const size_t delivered = counts[0];
  got.resize(delivered);  // what it popped into batches 2 and 3 died with it
  std::string bytes;
  std::vector<uint32_t> chars;
  if (ring.TakeHeld(&bytes, &chars, 2) != 0) Fail("TakeHeld of another holder", long(chars.size()), 0);
  const uint32_t taken = ring.TakeHeld(&bytes, &chars, 1);
  if (taken != counts[1] + counts[2]) Fail("TakeHeld count", long(taken), long(counts[1] + counts[2]));
  parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  if (ring.TakeHeld(&bytes, &chars) != 0) Fail("TakeHeld twice", 0, 0);
  uint32_t which = 0;
  DrainUntilEmpty(core, lane, {0}, 0, 13, 1000, 0, producersLeft, which, [&](int, int, long s) { got.push_back(s); }, true);
  producer.join();
  if (long(got.size()) != total) Fail("dead consumer: received", long(got.size()), total);
  for (size_t i = 0; i < got.size(); i++) {
    if (got[i] != long(i)) {
      Fail("dead consumer: gap, duplicate or reorder", long(i), got[i]);
      break;
    }
  }
  if (ring.Size() != 0) Fail("dead consumer: ring not empty", ring.Size(), 0);
  if (report) std::printf("  dead consumer: %u records taken back, %zu of %d received in order\n", taken, got.size(), total);
}

// Phase 6: random pushes, pops with hold (by one of three holders), acks of a prefix of a held batch, and
// TakeHeld (of one holder, or of all), on a small ring in one thread. A batch TakeHeld took stays with its
// consumer, which acknowledges it later like any other (the ring has usually gone round by then). TakeHeld
// must hand back exactly the records of that holder (or all) nobody finished, in order; Held() and Size()
// must be exact; and at the end the ring must have all its room back.
void LateAcks(int steps, uint32_t seed) {
  Ring ring(8, 1024);
  std::mt19937 rng(seed);
  long pushed = 0, popped = 0;
  struct Held {
    uint32_t pos, holder;
  };
  std::map<long, Held> held;  // sequence number -> position and holder, of records popped and nobody finished
  struct Batch {
    uint32_t first;
    std::vector<long> seqs;
  };
  std::vector<Batch> holders;  // batches consumers hold (and will acknowledge), taken by TakeHeld or not
  auto parse = [](const uint8_t* a, size_t n, std::vector<long>* out) { ParseSpan(a, n, [&](int, int, long s) { out->push_back(s); }); };
  // Held() counts from the oldest record nobody finished to the claim head (the release head stops there).
  auto check = [&](const char* after) {
    const uint32_t holding = held.empty() ? 0 : uint32_t(popped) - held.begin()->second.pos;
    if (ring.Size() != uint32_t(pushed - popped)) Fail(after, long(ring.Size()), pushed - popped);
    if (ring.Held() != holding) Fail(after, long(ring.Held()), long(holding));
  };
  for (int step = 0; step < steps && failures.load() == 0; step++) {
    const uint32_t op = rng() % 8;
    if (op < 2) {  // push 1..4 records, as many as fit
      std::vector<uint32_t> lens;
      std::string text;
      for (uint32_t i = 0, n = 1 + rng() % 4; i < n; i++) {
        std::string r = Record(0, 0, pushed + i, rng);
        lens.push_back(uint32_t(r.size()));
        text += r;
      }
      Reservation res;
      if (ring.Reserve(lens.data(), lens.data(), uint32_t(lens.size()), false, &res)) {
        std::memcpy(ring.arena() + res.dst, text.data(), res.bytes);
        ring.Commit(res);
        pushed += res.count;
      }
      check("late acks: after push (size, held)");
    } else if (op < 4) {  // pop 1..4 with hold, by holder 1, 2 or 3
      Batch b{0, {}};
      const uint32_t holder = 1 + rng() % 3;
      const uint32_t k = ring.Pop(
          1 + rng() % 4, [&](const uint8_t* a, size_t na, const uint8_t* c, size_t nc, uint32_t) { parse(a, na, &b.seqs); if (c) parse(c, nc, &b.seqs); },
          nullptr, true, &b.first, holder);
      if (k != b.seqs.size()) Fail("late acks: pop count", long(k), long(b.seqs.size()));
      for (uint32_t i = 0; i < k; i++) {
        if (b.seqs[i] != popped + i) Fail("late acks: popped out of order", b.seqs[i], popped + i);
        held[b.seqs[i]] = Held{b.first + i, holder};
      }
      popped += k;
      if (k > 0) holders.push_back(std::move(b));
      check("late acks: after pop (size, held)");
    } else if (op < 7) {  // a consumer acknowledges a prefix of a batch it holds
      if (holders.empty()) continue;
      const size_t i = rng() % holders.size();
      Batch& b = holders[i];
      const uint32_t j = 1 + uint32_t(rng() % b.seqs.size());
      ring.Ack(b.first, j);
      for (uint32_t x = 0; x < j; x++) held.erase(b.seqs[x]);  // finished (unless TakeHeld took it already)
      b.first += j;
      b.seqs.erase(b.seqs.begin(), b.seqs.begin() + j);
      if (b.seqs.empty()) {
        holders[i] = std::move(holders.back());
        holders.pop_back();
      }
      check("late acks: after ack (size, held)");
    } else {  // TakeHeld of one holder (or all): exactly its held records, in order; their consumers still hold them
      std::string bytes;
      std::vector<uint32_t> chars;
      const uint32_t holder = rng() % 4;  // 0: every holder's
      const uint32_t k = ring.TakeHeld(&bytes, &chars, holder);
      std::vector<long> got, want;
      parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &got);
      for (auto it = held.begin(); it != held.end();) {
        if (holder != 0 && it->second.holder != holder) {
          ++it;
          continue;
        }
        want.push_back(it->first);
        it = held.erase(it);
      }
      if (k != got.size() || got != want) Fail("late acks: TakeHeld took other records than the held ones", long(got.size()), long(want.size()));
      check("late acks: after TakeHeld (size, held)");
    }
  }
  // Everyone acknowledges what they hold; nothing is held any more, and the ring has all its room back.
  for (Batch& b : holders) ring.Ack(b.first, uint32_t(b.seqs.size()));
  std::string bytes;
  std::vector<uint32_t> chars;
  if (ring.TakeHeld(&bytes, &chars) != 0) Fail("late acks: TakeHeld after every ack", long(chars.size()), 0);
  while (ring.Pop(8, [](const uint8_t*, size_t, const uint8_t*, size_t, uint32_t) {}) > 0) {
  }
  if (ring.Held() != 0 || ring.Size() != 0) Fail("late acks: held, size at the end", long(ring.Held()), long(ring.Size()));
  std::vector<uint32_t> lens(8, 10);
  Reservation res;
  if (!ring.Reserve(lens.data(), lens.data(), 8, true, &res)) Fail("late acks: the ring did not get its room back", 0, 0);
}

// Phase 7: TakeHeld racing an ack may read a slot a producer is reusing, and see the offset of one record
// with the length of another. Set up directly (a held record whose slot shows a range past the arena end):
// TakeHeld must not read outside the arena (AddressSanitizer) and must skip that record.
void TornSlot() {
  Ring ring(8, 1024);
  std::vector<uint32_t> lens;
  std::string text;
  std::mt19937 rng(3);
  for (int i = 0; i < 3; i++) {
    std::string r = Record(0, 0, i, rng);
    lens.push_back(uint32_t(r.size()));
    text += r;
  }
  Reservation res;
  if (!ring.Reserve(lens.data(), lens.data(), 3, true, &res)) return Fail("torn slot: reserve", 0, 0);
  std::memcpy(ring.arena() + res.dst, text.data(), res.bytes);
  ring.Commit(res);
  uint32_t first = 0;
  ring.Pop(3, [](const uint8_t*, size_t, const uint8_t*, size_t, uint32_t) {}, nullptr, true, &first);
  Slot& s = RingTestAccess::At(ring, first + 1);
  const uint32_t off = s.off.load(), len = s.len.load();
  s.off.store(1000);
  s.len.store(200);
  std::string bytes;
  std::vector<uint32_t> chars;
  std::vector<long> got;
  const uint32_t taken = ring.TakeHeld(&bytes, &chars);
  ParseSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), [&](int, int, long seq) { got.push_back(seq); });
  if (taken != 2 || got != std::vector<long>{0, 2}) Fail("torn slot: TakeHeld took the torn record (taken, parsed)", long(taken), long(got.size()));
  s.off.store(off);
  s.len.store(len);
  bytes.clear();
  got.clear();
  if (ring.TakeHeld(&bytes, &chars) != 1) Fail("torn slot: the record left behind", 0, 1);
  ParseSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), [&](int, int, long seq) { got.push_back(seq); });
  if (got != std::vector<long>{1} || ring.Held() != 0) Fail("torn slot: then the record is taken (held)", long(ring.Held()), 0);
}

// Phase 10: see the top of the file.
void LaneChurn(int churns, uint32_t seed) {
  constexpr int kTable = 4;
  Core core(64, 2048);
  std::atomic<uint64_t> ids[kTable];
  for (auto& id : ids) id.store(core.CreateLane(2));
  std::atomic<bool> stop{false};
  std::atomic<long> pushed{0}, popped{0}, refused{0};
  std::atomic<long> uses{0};  // tries of the producers and consumers, refused ones included: the churn waits for them
  std::vector<std::thread> threads;
  for (int p = 0; p < 2; p++) {
    threads.emplace_back([&, p] {
      std::mt19937 rng(seed * 31 + p);
      while (!stop.load(std::memory_order_relaxed)) {
        const int k = int(rng() % kTable);
        const uint64_t id = ids[k].load();
        uses.fetch_add(1, std::memory_order_relaxed);
        Core::LaneRef lane = core.Use(id);
        if (!lane) {
          refused.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        const uint32_t part = rng() % lane->partitions();
        std::string text;
        std::vector<uint32_t> lens;
        for (int b = 0, n = 1 + int(rng() % 8); b < n; b++) {
          std::string r = Record(p, k, long(id), rng);
          lens.push_back(uint32_t(r.size()));
          text += r;
        }
        Ring& ring = lane->ring(part);
        Reservation res;
        if (!ring.Reserve(lens.data(), lens.data(), uint32_t(lens.size()), false, &res)) continue;  // full: dropped
        ring.Fill(res, reinterpret_cast<const uint8_t*>(text.data()));
        ring.Commit(res);
        lane->Notify(part);
        pushed.fetch_add(res.count, std::memory_order_relaxed);
      }
    });
  }
  for (int c = 0; c < 2; c++) {
    threads.emplace_back([&, c] {
      std::mt19937 rng(seed * 17 + c);
      const uint32_t parts[2] = {0, 1};
      while (!stop.load(std::memory_order_relaxed)) {
        const int k = int(rng() % kTable);
        const uint64_t id = ids[k].load();
        uses.fetch_add(1, std::memory_order_relaxed);
        Core::LaneRef lane = core.Use(id);
        if (!lane) continue;
        // Several pops under one use, some asleep (a free wakes them), some holding what they pop.
        for (int i = 0; i < 4; i++) {
          const bool hold = rng() % 2 == 0;
          uint32_t which = 0, first = 0;
          const uint32_t n = PopAny(
              core, *lane, parts, lane->partitions(), uint32_t(i), 16, rng() % 4 == 0 ? 20000 : 0, 0, &which,
              [&](const uint8_t* a, size_t na, const uint8_t* b, size_t nb, uint32_t) {
                auto check = [&](int, int kk, long s) {
                  if (kk != k || uint64_t(s) != id) Fail("lane churn: a record of another lane (slot, id)", long(kk), s);
                };
                ParseSpan(a, na, check);
                if (b) ParseSpan(b, nb, check);
              },
              nullptr, hold, &first, uint32_t(c + 1));
          if (hold && n > 0) lane->ring(which).Ack(first, n);
          popped.fetch_add(n, std::memory_order_relaxed);
        }
      }
    });
  }
  std::mt19937 rng(seed);
  long reused = 0;
  for (int i = 0; i < churns && failures.load() == 0; i++) {
    // Paced by the users: a few of their tries between two churns.
    for (const long until = uses.load() + 8; uses.load() < until;) std::this_thread::yield();
    const int k = int(rng() % kTable);
    const uint64_t old = ids[k].load();
    uint64_t fresh;
    if (rng() % 2 == 0) {  // free first: the slot is reused at once when nobody was using the lane
      if (!core.FreeLane(old)) Fail("lane churn: FreeLane of a live lane", long(old), 0);
      fresh = core.CreateLane(1 + rng() % 2);
    } else {  // create first: the table never names a freed lane for long
      fresh = core.CreateLane(1 + rng() % 2);
      ids[k].store(fresh);
      if (!core.FreeLane(old)) Fail("lane churn: FreeLane of a live lane", long(old), 1);
    }
    if (fresh == Core::kNoLane) return Fail("lane churn: CreateLane refused", i, 0);
    if ((fresh & (Core::kMaxLanes - 1)) == (old & (Core::kMaxLanes - 1))) reused++;
    ids[k].store(fresh);
    if (core.Use(old)) Fail("lane churn: a freed id is usable", long(old), long(fresh));
    if (core.FreeLane(old)) Fail("lane churn: a lane freed twice", long(old), 0);
    if (core.liveLanes() > uint32_t(kTable + 4 + 1)) Fail("lane churn: lanes piling up (live)", long(core.liveLanes()), 0);  // at most one per user
  }
  core.Close();  // while the threads still use lanes
  stop.store(true);
  for (auto& t : threads) t.join();
  for (auto& id : ids) core.FreeLane(id.load());
  if (core.liveLanes() != 0 || core.laneBytes() != 0) Fail("lane churn: left allocated (lanes, bytes)", long(core.liveLanes()), long(core.laneBytes()));
  if (reused == 0) Fail("lane churn: no slot was ever reused", 0, 0);
  std::printf("  %d churns, %ld slots reused at once: pushed=%ld popped=%ld, %ld uses of freed ids refused\n", churns, reused,
              pushed.load(), popped.load(), refused.load());
}

// Phase 10, then: the bound is on lanes alive at once.
void LaneBound() {
  Core core(2, 1024);
  std::vector<uint64_t> ids;
  for (uint32_t i = 0; i < Core::kMaxLanes; i++) ids.push_back(core.CreateLane(1));
  if (core.CreateLane(1) != Core::kNoLane) Fail("lane bound: a lane past kMaxLanes", 0, 0);
  if (!core.FreeLane(ids[77])) Fail("lane bound: FreeLane", 0, 0);
  const uint64_t again = core.CreateLane(1);
  if (again == Core::kNoLane || again == ids[77] || (again & (Core::kMaxLanes - 1)) != (ids[77] & (Core::kMaxLanes - 1))) {
    Fail("lane bound: the freed slot, under a new id", long(again), long(ids[77]));
  }
  if (core.liveLanes() != Core::kMaxLanes) Fail("lane bound: live lanes", long(core.liveLanes()), long(Core::kMaxLanes));
}

}  // namespace

// rate 0: one burst after the consumers idled (latency-burst's floor), else events per second.
void Floor(uint32_t consumers, uint32_t spinUs, uint32_t count, bool pin, double rate = 20000) {
  FloorOptions o;
  o.rate = rate;
  o.count = count;
  o.consumers = consumers;
  o.spinUs = spinUs;
  if (rate == 0) o.quietMs = 50;
  if (pin) o.cpus = ThreadCpus();
  FloorResult r = LatencyFloor(o).Run();
  if (!r.error.empty()) {
    std::fprintf(stderr, "FAIL: latency floor: %s\n", r.error.c_str());
    failures.fetch_add(1);
    return;
  }
  if (r.unique != count || r.received != count) Fail("latency floor: received, unique", long(r.received), long(r.unique));
  if (r.latencyNs.size() != count) Fail("latency floor: latencies", long(r.latencyNs.size()), long(count));
  for (size_t i = 0; i < r.latencyNs.size(); i++) {
    if (!(r.latencyNs[i] >= 0)) Fail("latency floor: latency not >= 0 (index, ns)", long(i), long(r.latencyNs[i]));
  }
  std::printf("  consumers=%u spinUs=%u pinned=%d %s: %llu events\n", consumers, spinUs, pin ? 1 : 0, rate == 0 ? "burst" : "paced", (unsigned long long)r.unique);
}

// Phase 9: StreamCopy at every alignment and size around and past its threshold.
void StreamCopies() {
  std::mt19937 rng(9);
  const size_t maxN = kStreamCopyMinBytes + 300;
  std::vector<uint8_t> src(maxN + 32), dst(maxN + 64);
  for (auto& b : src) b = uint8_t(rng());
  std::vector<size_t> sizes;
  for (size_t n = 0; n < 260; n++) sizes.push_back(n);
  for (size_t n = kStreamCopyMinBytes > 4 ? kStreamCopyMinBytes - 4 : 0; n <= maxN; n++) sizes.push_back(n);
  for (size_t n : sizes) {
    for (size_t sa = 0; sa < 16; sa += 5) {
      for (size_t da = 0; da < 16; da++) {
        std::fill(dst.begin(), dst.end(), uint8_t(0xA5));
        StreamCopy(dst.data() + 16 + da, src.data() + sa, n);
        for (size_t i = 0; i < 16 + da; i++) {
          if (dst[i] != 0xA5) return Fail("StreamCopy wrote before its destination", long(n), long(da));
        }
        if (std::memcmp(dst.data() + 16 + da, src.data() + sa, n) != 0) return Fail("StreamCopy copied wrong bytes", long(n), long(da));
        for (size_t i = 16 + da + n; i < dst.size(); i++) {
          if (dst[i] != 0xA5) return Fail("StreamCopy wrote past its destination", long(n), long(da));
        }
      }
    }
  }
}

int main(int argc, char** argv) {
  const int scale = argc > 1 ? std::atoi(argv[1]) : 1;
  std::printf("phase 1: block, multi-producer rings, exactly once in order\n");
  Run({4, 3, 6, 60, 20000 * scale, 256, 4096, kPartial}, true);
  Run({3, 2, 2, 20, 20000 * scale, 64, 1024, kPartial}, true);  // tiny arena: constant wrap and backpressure
  SharedConsumers(3, 3, 2, 20000 * scale);
  std::printf("phase 1c: records held by consumers and acknowledged out of order\n");
  Run({4, 3, 6, 60, 20000 * scale, 256, 4096, kPartial}, true, true);
  Run({3, 2, 2, 20, 20000 * scale, 64, 1024, kPartial}, true, true);
  SharedConsumers(3, 3, 2, 20000 * scale, true);
  std::printf("phase 2: drop-oldest under contention\n");
  Run({3, 2, 4, 40, 20000 * scale, 32, 1024, kEvictOldest}, false);
  Run({3, 2, 4, 40, 20000 * scale, 32, 1024, kEvictOldest}, false, true);
  std::printf("phase 3: counters\n");
  Counters3();
  std::printf("phase 4: a consumer dies holding records\n");
  for (int i = 0; i < 5 * scale; i++) DeadConsumer(5000, i == 0);
  std::printf("phase 5: try-publish probe, one producer\n");
  Run({1, 2, 4, 40, 40000 * scale, 256, 8192, kProbe}, true);
  Run({1, 2, 4, 40, 40000 * scale, 256, 8192, kProbe}, true, true);
  std::printf("phase 6: late acks of records TakeHeld took\n");
  for (int i = 0; i < 10 * scale; i++) LateAcks(20000, uint32_t(i + 1));
  std::printf("phase 7: TakeHeld meets a slot being reused\n");
  TornSlot();
  std::printf("phase 8: latency floor threads\n");
  Floor(1, 0, 1000 * scale, false);
  Floor(4, 0, 1000 * scale, false);
  Floor(1, 50, 1000 * scale, false);
  if (ThreadCpus().size() >= 2) Floor(2, 0, 1000 * scale, true);
  Floor(1, 0, 1000 * scale, false, 0);
  Floor(4, 0, 1000 * scale, false, 0);
  std::printf("phase 9: StreamCopy (threshold %zu bytes)\n", kStreamCopyMinBytes);
  StreamCopies();
  std::printf("phase 10: lanes freed and created again while threads use them\n");
  for (int i = 0; i < 4; i++) LaneChurn(500 * scale, uint32_t(i + 1));
  LaneBound();
  if (failures.load() > 0) {
    std::fprintf(stderr, "%d failures\n", failures.load());
    return 1;
  }
  std::printf("OK\n");
  return 0;
}
