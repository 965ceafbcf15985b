// The benchmark-only addon: exports latencyFloor, the machine's latency floor (latency-floor.h), and `abi`.
// Loaded by the benchmark CLI alone (benchmarking/lib/floor-binding.ts), never by the package.
#include <napi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "latency-floor.h"

namespace eventlane {

// Reads info[i] as a number in [lo, hi]; otherwise throws a RangeError naming `what` and returns false.
static bool NumberIn(const Napi::CallbackInfo& info, size_t i, double lo, double hi, const char* what, double* out) {
  const double v = info.Length() > i && info[i].IsNumber() ? info[i].As<Napi::Number>().DoubleValue() : std::nan("");
  if (!(v >= lo && v <= hi)) {
    char range[64];
    std::snprintf(range, sizeof range, "[%g, %g]", lo, hi);
    Napi::RangeError::New(info.Env(), std::string("latencyFloor: ") + what + " must be a number in " + range).ThrowAsJavaScriptException();
    return false;
  }
  *out = v;
  return true;
}

// latencyFloor(rate, count, consumers, spinUs, cpus?, quietMs?) -> { latencyNs: Float64Array, received, unique, windowNs }:
// the core driven by C++ threads only (latency-floor.h). Blocks the calling thread, the sender, for
// count / rate seconds (rate 0: lets the consumers idle quietMs, then sends one burst and waits for it). Throws when an event did not arrive in time, or a thread cannot be pinned.
static Napi::Value LatencyFloorJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  FloorOptions o;
  double count = 0, consumers = 0, spinUs = 0, quietMs = 0;
  // rate 0: one burst; otherwise events per second.
  o.rate = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : std::nan("");
  if (!(o.rate == 0 || (o.rate >= 1e-3 && o.rate <= 1e8))) {
    Napi::RangeError::New(env, "latencyFloor: rate must be 0 (one burst) or a number in [0.001, 1e+08]").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  if (!NumberIn(info, 1, 1, 1e8, "count", &count) || !NumberIn(info, 2, 1, 256, "consumers", &consumers) || !NumberIn(info, 3, 0, 10000, "spinUs", &spinUs)) {
    return env.Undefined();
  }
  o.count = uint32_t(count), o.consumers = uint32_t(consumers), o.spinUs = uint32_t(spinUs);
  if (info.Length() > 5 && !info[5].IsUndefined()) {
    if (!NumberIn(info, 5, 0, 10000, "quietMs", &quietMs)) return env.Undefined();
    o.quietMs = uint32_t(quietMs);
  }
  if (info.Length() > 4 && !info[4].IsUndefined()) {
    const bool list = info[4].IsArray() && info[4].As<Napi::Array>().Length() >= 2;
    for (uint32_t i = 0; list && i < info[4].As<Napi::Array>().Length(); i++) {
      Napi::Value c = info[4].As<Napi::Array>().Get(i);
      if (!c.IsNumber()) break;
      o.cpus.push_back(c.As<Napi::Number>().Int32Value());
    }
    if (!list || o.cpus.size() != info[4].As<Napi::Array>().Length()) {
      Napi::TypeError::New(env, "latencyFloor: cpus must be an array of at least 2 CPU numbers (the sender's, then the consumers')").ThrowAsJavaScriptException();
      return env.Undefined();
    }
  }
  FloorResult r;
  try {
    r = LatencyFloor(o).Run();
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  if (!r.error.empty()) {
    Napi::Error::New(env, "latencyFloor: " + r.error).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Float64Array lat = Napi::Float64Array::New(env, r.latencyNs.size());
  std::memcpy(lat.Data(), r.latencyNs.data(), r.latencyNs.size() * sizeof(double));
  Napi::Object out = Napi::Object::New(env);
  out.Set("latencyNs", lat);
  out.Set("received", double(r.received));
  out.Set("unique", double(r.unique));
  out.Set("windowNs", r.windowNs);
  return out;
}

}  // namespace eventlane

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("latencyFloor", Napi::Function::New(env, eventlane::LatencyFloorJs, "latencyFloor"));
  exports.Set("abi", Napi::Number::New(env, 1));  // benchmarking/lib/floor-binding.ts FLOOR_ABI
  return exports;
}

NODE_API_MODULE(eventlane_floor, Init)
