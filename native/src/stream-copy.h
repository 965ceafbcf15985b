// Copying a batch of records into the arena. The arena is larger than a core's L2 cache and its consumer
// runs on another thread, so the lines a push writes are cold: with plain stores (memcpy) every line is first
// read for ownership, then written. Large batches use non-temporal (streaming) stores, which write whole
// lines without reading them: cheaper for the producer, at some cost to the consumer's copy of those lines
// (native/test/push-bench.cc measures both). Small copies (a single publish, where latency
// counts and the consumer may read the line at once) keep memcpy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace eventlane {

// Below this, memcpy: a streamed line is not in any cache when the consumer reads it. The stress test
// builds with a low threshold, so its concurrent batches take the streaming path.
#ifndef EVENTLANE_STREAM_COPY_MIN
#define EVENTLANE_STREAM_COPY_MIN (32 * 1024)
#endif
constexpr size_t kStreamCopyMinBytes = EVENTLANE_STREAM_COPY_MIN;

// Copies n bytes from src to dst (not overlapping). At or above kStreamCopyMinBytes, with SSE2, the
// 16-byte-aligned middle of dst is written with non-temporal stores, followed by a store fence, so the
// bytes are visible to any thread that later acquires what the caller then publishes with a release store.
inline void StreamCopy(uint8_t* dst, const uint8_t* src, size_t n) {
#if defined(__SSE2__)
  if (n >= kStreamCopyMinBytes) {
    size_t head = (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15;
    std::memcpy(dst, src, head);
    dst += head;
    src += head;
    n -= head;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
    }
    for (; i + 16 <= n; i += 16) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    }
    std::memcpy(dst + i, src + i, n - i);
    // Streaming stores are weakly ordered: fence them before the caller's release store publishes them.
    _mm_sfence();
    return;
  }
#endif
  std::memcpy(dst, src, n);
}

}  // namespace eventlane
