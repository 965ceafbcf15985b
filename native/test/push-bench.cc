// Producer-side cost of pushing a batch into a ring, memcpy against the streaming copy (stream-copy.h).
// Build and run:  g++ -O2 -std=c++17 -pthread -Inative/src native/test/push-bench.cc -o /tmp/push-bench && /tmp/push-bench
// Arguments: [records per batch=4096] [bytes per record=85] [producer work per batch, us=600]
// A producer thread does `work` us of other work (as the JS encoder does), then reserves, copies and commits
// the batch; a consumer thread pops and copies out what it pops (as the addon's pop does). Prints the
// producer's ns per record for the push alone, and the consumer's for its copy, for both copies.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core.h"

using namespace eventlane;
using Clock = std::chrono::steady_clock;

static double Ns(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::nano>(b - a).count(); }

static void Run(bool stream, uint32_t batch, uint32_t len, int workUs) {
  const uint32_t capacity = 16384, arena = capacity * 128;  // the transport's defaults
  Core core(capacity, arena);
  Core::LaneRef ref = core.Use(core.CreateLane(1));
  Lane& lane = *ref;
  Ring& ring = lane.ring(0);
  std::vector<uint8_t> src(size_t(batch) * len);
  std::vector<uint32_t> lens(batch, len);
  const long total = 4'000'000;
  double pushNs = 0, popNs = 0;
  long popped = 0;
  std::thread consumer([&] {
    const uint32_t parts[1] = {0};
    uint32_t which;
    std::vector<uint8_t> out(static_cast<size_t>(arena));
    while (popped < total) {
      popped += PopAny(core, lane, parts, 1, 0, batch, 1000, 50, &which, [&](const uint8_t* a, size_t na, const uint8_t* b, size_t nb, uint32_t) {
        const auto t0 = Clock::now();
        std::memcpy(out.data(), a, na);
        if (nb) std::memcpy(out.data() + na, b, nb);
        popNs += Ns(t0, Clock::now());
      });
    }
  });
  for (long pushed = 0; pushed < total; pushed += batch) {
    const auto w = Clock::now() + std::chrono::microseconds(workUs);
    for (size_t i = 0; i < src.size(); i++) src[i] = uint8_t('a' + (i + pushed) % 26);  // the encoder's output: hot in cache
    while (Clock::now() < w) {
    }
    const auto t0 = Clock::now();
    uint32_t done = 0;
    size_t off = 0;
    while (done < batch) {
      Reservation res;
      if (!ring.Reserve(lens.data() + done, lens.data() + done, batch - done, false, &res)) continue;  // full: spin
      if (stream) ring.Fill(res, src.data() + off);
      else std::memcpy(ring.arena() + res.dst, src.data() + off, res.bytes);
      ring.Commit(res);
      done += res.count;
      off += res.bytes;
    }
    lane.Notify(0);
    pushNs += Ns(t0, Clock::now());
  }
  consumer.join();
  std::printf("%-7s %u x %u B: push %.1f ns/record, consumer copy %.1f ns/record\n", stream ? "stream" : "memcpy", batch, len, pushNs / total, popNs / total);
}

int main(int argc, char** argv) {
  const uint32_t batch = argc > 1 ? uint32_t(std::atoi(argv[1])) : 4096;
  const uint32_t len = argc > 2 ? uint32_t(std::atoi(argv[2])) : 85;
  const int workUs = argc > 3 ? std::atoi(argv[3]) : 600;
  Run(false, batch, len, workUs);
  Run(true, batch, len, workUs);
  return 0;
}
