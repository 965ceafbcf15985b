// N-API binding of the partition core. One call per batch: push takes a whole batch as UTF-8 bytes plus
// record lengths; pop returns one string holding a batch of records (and their offsets).
// A call made as worker.terminate() stops the thread can fail (napi_pending_exception), and the error it
// raises cannot be thrown into JS either: without this, node-addon-api throws a C++ exception out of the
// callback and the process aborts (std::terminate).
#define NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS
#include <napi.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "affinity.h"
#include "core.h"

namespace eventlane {

namespace {

thread_local std::vector<uint8_t> tScratch;

// drop-oldest: how long a push waits for consumers to hand back room when nothing is left to evict, before
// it drops the rest of its records as the newest (js-core.ts EVICT_WAIT_MS: it outlasts a releasing worker
// thread descheduled between its pop and its release on a loaded machine).
constexpr int64_t kEvictWaitUs = 10000;

}  // namespace

// Context-aware (Node-API addon instance per environment), so it loads in every worker thread.
class Addon : public Napi::Addon<Addon> {
 public:
  Addon(Napi::Env env, Napi::Object exports);
};

class CoreHandle : public Napi::ObjectWrap<CoreHandle> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Core",
                       {
                           InstanceAccessor<&CoreHandle::Id>("id"),
                           InstanceAccessor<&CoreHandle::Closed>("closed"),
                           InstanceAccessor<&CoreHandle::Capacity>("capacity"),
                           InstanceAccessor<&CoreHandle::ArenaBytes>("arenaBytes"),
                           InstanceMethod<&CoreHandle::CreateLane>("createLane"),
                           InstanceMethod<&CoreHandle::FreeLane>("freeLane"),
                           InstanceMethod<&CoreHandle::Usage>("usage"),
                           InstanceMethod<&CoreHandle::Push>("push"),
                           InstanceMethod<&CoreHandle::Pop>("pop"),
                           InstanceMethod<&CoreHandle::Ack>("ack"),
                           InstanceMethod<&CoreHandle::TakeHeld>("takeHeld"),
                           InstanceMethod<&CoreHandle::Stats>("stats"),
                           InstanceMethod<&CoreHandle::Notify>("notify"),
                           InstanceMethod<&CoreHandle::Close>("close"),
                           InstanceMethod<&CoreHandle::Release>("release"),
                       });
  }

  // new Core(capacity, arenaBytes) creates a core; new Core(0, 0, id) attaches to an existing one.
  CoreHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<CoreHandle>(info) {
    Napi::Env env = info.Env();
    if (info.Length() >= 3 && info[2].IsNumber()) {
      id_ = info[2].As<Napi::Number>().Uint32Value();
      core_ = Registry::Get().Find(id_);
      if (!core_) {
        Napi::Error::New(env, "no native core with id " + std::to_string(id_) + " (closed?)").ThrowAsJavaScriptException();
        return;
      }
    } else {
      double cap = info[0].As<Napi::Number>().DoubleValue();
      double arena = info[1].As<Napi::Number>().DoubleValue();
      if (!(cap >= 2 && cap <= (1 << 24)) || !(arena >= 1024 && arena <= double(1u << 30))) {
        Napi::RangeError::New(env, "capacity must be in [2, 16777216] and arenaBytes in [1024, 1073741824]")
            .ThrowAsJavaScriptException();
        return;
      }
      core_ = std::make_shared<Core>(RoundUpPow2(uint64_t(cap)), RoundUpPow2(uint64_t(arena)));
      id_ = Registry::Get().Add(core_);
      owner_ = true;
    }
    env_ = env;
    napi_add_env_cleanup_hook(env, &CoreHandle::Cleanup, this);
  }

  ~CoreHandle() override { napi_remove_env_cleanup_hook(env_, &CoreHandle::Cleanup, this); }

  // Environment teardown (thread exit, worker.terminate()): drop this thread's reference to the core.
  static void Cleanup(void* self) { static_cast<CoreHandle*>(self)->core_.reset(); }

 private:
  Napi::Value Id(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), id_); }
  Napi::Value Closed(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), !core_ || core_->closed());
  }
  Napi::Value Capacity(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), core_ ? core_->capacity() : 0);
  }
  Napi::Value ArenaBytes(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), core_ ? core_->arenaBytes() : 0);
  }

  bool Check(Napi::Env env) {
    if (!core_ || core_->closed()) {
      Napi::Error e = Napi::Error::New(env, "native core is closed");
      e.Set("code", Napi::String::New(env, "ERR_CLOSED"));
      e.ThrowAsJavaScriptException();
      return false;
    }
    return true;
  }

  // A lane id from JS (a number below 2^44, see Core); Core::kNoLane for anything else.
  static uint64_t LaneId(const Napi::Value& v) {
    if (!v.IsNumber()) return Core::kNoLane;
    const double d = v.As<Napi::Number>().DoubleValue();
    if (!(d >= 0 && d < 17592186044416.0) || d != std::floor(d)) return Core::kNoLane;
    return uint64_t(d);
  }

  // The lane `v` names, used (held) for as long as the returned reference lives: a lane freed meanwhile by
  // another thread stays allocated until then. Empty (a RangeError thrown) when there is no such lane
  // (never was, or freed) or it has no `partition`.
  Core::LaneRef UseLane(Napi::Env env, const Napi::Value& v, uint32_t partition) {
    Core::LaneRef lane = core_->Use(LaneId(v));
    if (!lane || partition >= lane->partitions()) {
      Napi::RangeError::New(env, "bad lane or partition").ThrowAsJavaScriptException();
      return Core::LaneRef();
    }
    return lane;
  }

  // Whether `v` is a typed array of `type` with at least `minLength` elements; otherwise throws (TypeError for
  // another kind, RangeError when too short) and returns false. Data() of a typed array of another element
  // type, or index past its end, would read or write outside its memory.
  static bool IsArrayOf(Napi::Env env, const Napi::Value& v, napi_typedarray_type type, size_t minLength, const char* what) {
    if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != type) {
      Napi::TypeError::New(env, std::string(what) + (type == napi_uint8_array ? " must be a Uint8Array" : " must be a Uint32Array"))
          .ThrowAsJavaScriptException();
      return false;
    }
    if (v.As<Napi::TypedArray>().ElementLength() < minLength) {
      Napi::RangeError::New(env, std::string(what) + " must hold at least " + std::to_string(minLength) + " entries")
          .ThrowAsJavaScriptException();
      return false;
    }
    return true;
  }

  // The ring of (info[0] lane, info[1] partition), valid while `*lane` lives; nullptr (a RangeError thrown)
  // when there is none.
  Ring* RingAt(const Napi::CallbackInfo& info, Core::LaneRef* lane) {
    const uint32_t partition = info[1].As<Napi::Number>().Uint32Value();
    *lane = UseLane(info.Env(), info[0], partition);
    return *lane ? &(*lane)->ring(partition) : nullptr;
  }

  Napi::Value CreateLane(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!Check(env)) return env.Undefined();
    double parts = info[0].As<Napi::Number>().DoubleValue();
    if (!(parts >= 1 && parts <= 4096)) {
      Napi::RangeError::New(env, "partitions must be in [1, 4096]").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    uint64_t id;
    try {
      id = core_->CreateLane(uint32_t(parts));
    } catch (const std::bad_alloc&) {
      // The OS refused the rings' memory: a typed error, not std::terminate aborting the process. What was
      // allocated is freed (the rings own their memory); the lane is not created.
      Napi::Error e = Napi::Error::New(env, "cannot allocate " + std::to_string(uint32_t(parts)) + " ring(s) of " +
                                                std::to_string(uint64_t(core_->capacity()) * sizeof(Slot) + core_->arenaBytes()) + " bytes");
      e.Set("code", Napi::String::New(env, "ERR_NATIVE_ALLOC"));
      e.ThrowAsJavaScriptException();
      return env.Undefined();
    }
    if (id == Core::kNoLane) {
      Napi::Error::New(env, "too many lanes").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    return Napi::Number::New(env, double(id));
  }

  // freeLane(lane) -> whether there was such a lane. From now on no call on any thread finds it (push,
  // stats, takeHeld and ack throw RangeError; pop returns null; notify does nothing), a pop waiting in it
  // returns, and its rings are deleted once the calls already using it return. Its id is never valid again.
  Napi::Value FreeLane(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!core_) return Napi::Boolean::New(env, false);
    return Napi::Boolean::New(env, core_->FreeLane(LaneId(info[0])));
  }

  // usage() -> [lanes, bytes]: lanes allocated in the core now (by any thread; freed ones still in use
  // included) and the bytes of their rings.
  Napi::Value Usage(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Array a = Napi::Array::New(env, 2);
    a.Set(uint32_t(0), double(core_ ? core_->liveLanes() : 0));
    a.Set(uint32_t(1), double(core_ ? core_->laneBytes() : 0));
    return a;
  }

  // push(lane, partition, bytes: Uint8Array, byteLens: Uint32Array, charLens: Uint32Array, n, mode)
  // -> records accepted. Record i is byteLens[i] UTF-8 bytes, consecutive in `bytes`, and charLens[i] UTF-16
  // units long as a JS string. Copied once, into the arena. Throws when a record can never fit the arena.
  Napi::Value Push(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!Check(env)) return env.Undefined();
    const uint32_t partition = info[1].As<Napi::Number>().Uint32Value();
    Core::LaneRef lane = UseLane(env, info[0], partition);
    if (!lane) return env.Undefined();
    Ring& ring = lane->ring(partition);
    if (!IsArrayOf(env, info[2], napi_uint8_array, 0, "push: bytes") || !IsArrayOf(env, info[3], napi_uint32_array, 0, "push: byteLens") ||
        !IsArrayOf(env, info[4], napi_uint32_array, 0, "push: charLens")) {
      return env.Undefined();
    }
    Napi::Uint8Array bytes = info[2].As<Napi::Uint8Array>();
    Napi::Uint32Array byteLens = info[3].As<Napi::Uint32Array>();
    Napi::Uint32Array charLens = info[4].As<Napi::Uint32Array>();
    const uint32_t n = info[5].As<Napi::Number>().Uint32Value();
    const int mode = info[6].As<Napi::Number>().Int32Value();
    if (n == 0) return Napi::Number::New(env, 0);
    if (n > byteLens.ElementLength() || n > charLens.ElementLength()) {
      Napi::RangeError::New(env, "n exceeds the length arrays").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    const uint32_t* lens = byteLens.Data();
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
      if (lens[i] > ring.MaxRecordBytes()) {
        Napi::Error e = Napi::RangeError::New(env, "record of " + std::to_string(lens[i]) + " bytes exceeds the limit of " +
                                                       std::to_string(ring.MaxRecordBytes()) + " bytes (half the " +
                                                       std::to_string(ring.arenaBytes()) + "-byte arena)");
        e.Set("code", Napi::String::New(env, "ERR_PAYLOAD_TOO_LARGE"));
        e.ThrowAsJavaScriptException();
        return env.Undefined();
      }
      total += lens[i];
    }
    if (total > bytes.ByteLength()) {
      Napi::RangeError::New(env, "byteLens exceed the bytes given").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    if (mode == kProbe) return Napi::Number::New(env, ring.Fits(lens, n) ? n : 0);
    if (mode == kRefuse) {
      ring.counters().rejected.fetch_add(n, std::memory_order_relaxed);
      return Napi::Number::New(env, 0);
    }
    if (mode < kPartial || mode > kDropNewest) {
      Napi::RangeError::New(env, "push: unknown mode " + std::to_string(mode)).ThrowAsJavaScriptException();
      return env.Undefined();
    }
    const uint8_t* src = bytes.Data();
    uint32_t done = 0;
    size_t srcOff = 0;
    std::chrono::steady_clock::time_point evictDeadline{};
    while (done < n) {
      Reservation res;
      if (!ring.Reserve(lens + done, charLens.Data() + done, n - done, mode == kAllOrNothing, &res)) {
        if (mode == kEvictOldest) {
          if (ring.Evict(n - done) > 0) continue;
          // Nothing left to evict: the room is held by consumers (popped, not acknowledged). One between its
          // claim and its ack hands it back within microseconds; a handler that holds what it popped (worker
          // threads of a group made by a transport with another strategy) may take any time. Wait briefly,
          // then drop the rest as the newest rather than freeze this thread (the JS event loop).
          const auto now = std::chrono::steady_clock::now();
          if (evictDeadline == std::chrono::steady_clock::time_point{}) evictDeadline = now + std::chrono::microseconds(kEvictWaitUs);
          if (now < evictDeadline) {
            std::this_thread::yield();
            continue;
          }
        }
        break;
      }
      ring.Fill(res, src + srcOff);
      ring.Commit(res);
      done += res.count;
      srcOff += res.bytes;
      if (mode == kAllOrNothing) break;
    }
    if (done > 0) lane->Notify(partition);
    if (done < n) {
      if (mode == kDropNewest || mode == kEvictOldest) ring.counters().droppedNewest.fetch_add(n - done, std::memory_order_relaxed);
      if (mode == kAllOrNothing) ring.counters().rejected.fetch_add(n - done, std::memory_order_relaxed);
    }
    return Napi::Number::New(env, done);
  }

  // pop(lane, parts: Uint32Array, nParts, start, max, info: Uint32Array, waitUs, spinUs, offs?: Uint32Array,
  // hold?: boolean, holder?: number) -> string | null. info[0] = records, info[1] = partition, info[2] =
  // position of the first (for ack when `hold`); held records are marked as `holder`'s (see takeHeld). offs
  // (max + 1 entries) receives record starts in the string (UTF-16 units) and the end. Waits (bounded) only
  // when waitUs > 0: never on the main thread.
  Napi::Value Pop(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!core_) return env.Null();
    const bool hold = info.Length() > 9 && info[9].ToBoolean().Value();
    const uint32_t holder = info.Length() > 10 && info[10].IsNumber() ? info[10].As<Napi::Number>().Uint32Value() : 0;
    // info: [records, partition], and the first record's position with `hold`.
    if (!IsArrayOf(env, info[1], napi_uint32_array, 0, "pop: parts") || !IsArrayOf(env, info[5], napi_uint32_array, hold ? 3 : 2, "pop: info")) {
      return env.Undefined();
    }
    Napi::Uint32Array parts = info[1].As<Napi::Uint32Array>();
    const uint32_t nParts = info[2].As<Napi::Number>().Uint32Value();
    Core::LaneRef lane = core_->Use(LaneId(info[0]));  // held through the wait: a free meanwhile wakes it
    if (!lane || nParts == 0 || nParts > parts.ElementLength()) return env.Null();
    for (uint32_t i = 0; i < nParts; i++) {
      if (parts[i] >= lane->partitions()) {
        Napi::RangeError::New(env, "bad partition").ThrowAsJavaScriptException();
        return env.Undefined();
      }
    }
    const uint32_t start = info[3].As<Napi::Number>().Uint32Value();
    const uint32_t maxArg = info[4].As<Napi::Number>().Uint32Value();
    const uint32_t max = maxArg ? maxArg : 1;
    Napi::Uint32Array out = info[5].As<Napi::Uint32Array>();
    const uint32_t waitUs = info[6].As<Napi::Number>().Uint32Value();
    const uint32_t spinUs = info[7].As<Napi::Number>().Uint32Value();
    uint32_t* offs = nullptr;
    if (info.Length() > 8 && !info[8].IsUndefined() && !info[8].IsNull()) {
      if (!IsArrayOf(env, info[8], napi_uint32_array, size_t(max) + 1, "pop: offs (max + 1 entries)")) return env.Undefined();
      offs = info[8].As<Napi::Uint32Array>().Data();
    }
    napi_value result = nullptr;
    uint32_t which = 0;
    auto emit = [&](const uint8_t* a, size_t na, const uint8_t* b, size_t nb, uint32_t k) {
      // All ASCII when the text is as many UTF-16 units as bytes: then a straight latin1 copy, no decoding.
      const bool ascii = offs != nullptr && offs[k] == na + nb;
      const char* p = reinterpret_cast<const char*>(a);
      if (b != nullptr) {
        tScratch.resize(na + nb);
        memcpy(tScratch.data(), a, na);
        memcpy(tScratch.data() + na, b, nb);
        p = reinterpret_cast<const char*>(tScratch.data());
      }
      if (ascii) napi_create_string_latin1(env, p, na + nb, &result);
      else napi_create_string_utf8(env, p, na + nb, &result);
    };
    uint32_t first = 0;
    uint32_t k = PopAny(*core_, *lane, parts.Data(), nParts, start, max, waitUs > 50000 ? 50000 : waitUs,
                        spinUs, &which, emit, offs, hold, &first, holder);
    out[0] = k;
    out[1] = which;
    if (out.ElementLength() > 2) out[2] = first;
    return k > 0 ? Napi::Value(env, result) : env.Null();
  }

  // ack(lane, partition, first, count): releases records popped with `hold` (positions [first, first + count)).
  Napi::Value Ack(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Core::LaneRef lane;
    Ring* ring = core_ ? RingAt(info, &lane) : nullptr;
    if (!ring) return env.Undefined();
    const uint32_t count = info[3].As<Napi::Number>().Uint32Value();
    if (count > ring->capacity()) {
      Napi::RangeError::New(env, "ack count exceeds the capacity").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    ring->Ack(info[2].As<Napi::Number>().Uint32Value(), count);
    return env.Undefined();
  }

  // takeHeld(lane, partition, holder?) -> [text, offs: Uint32Array] | null: the records popped with `hold`
  // (by `holder`, when given and > 0; by anyone otherwise) and not acknowledged (a consumer thread died
  // holding them), acknowledged now; offs has each record's start in `text` (UTF-16 units) and the end.
  Napi::Value TakeHeld(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!core_) return env.Null();
    Core::LaneRef lane;
    Ring* ring = RingAt(info, &lane);
    if (!ring) return env.Undefined();
    std::string bytes;
    std::vector<uint32_t> chars;
    const uint32_t holder = info.Length() > 2 && info[2].IsNumber() ? info[2].As<Napi::Number>().Uint32Value() : 0;
    const uint32_t k = ring->TakeHeld(&bytes, &chars, holder);
    if (k == 0) return env.Null();
    Napi::Uint32Array offs = Napi::Uint32Array::New(env, size_t(k) + 1);
    uint64_t pos = 0;
    for (uint32_t i = 0; i < k; i++) {
      offs[i] = uint32_t(pos);
      pos += chars[i];
    }
    offs[k] = uint32_t(pos);
    Napi::Array out = Napi::Array::New(env, 2);
    out.Set(uint32_t(0), Napi::String::New(env, bytes));
    out.Set(uint32_t(1), offs);
    return out;
  }

  // stats(lane, partition) -> [pushed, popped, droppedNewest, droppedOldest, rejected, size, held]
  Napi::Value Stats(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Core::LaneRef lane;
    Ring* ring = core_ ? RingAt(info, &lane) : nullptr;
    if (!ring) return env.Undefined();
    Ring& r = *ring;
    Counters& c = r.counters();
    Napi::Array a = Napi::Array::New(env, 7);
    a.Set(uint32_t(0), double(c.pushed.load(std::memory_order_relaxed)));
    a.Set(uint32_t(1), double(c.popped.load(std::memory_order_relaxed)));
    a.Set(uint32_t(2), double(c.droppedNewest.load(std::memory_order_relaxed)));
    a.Set(uint32_t(3), double(c.droppedOldest.load(std::memory_order_relaxed)));
    a.Set(uint32_t(4), double(c.rejected.load(std::memory_order_relaxed)));
    a.Set(uint32_t(5), double(r.Size()));
    a.Set(uint32_t(6), double(r.Held()));
    return a;
  }

  Napi::Value Notify(const Napi::CallbackInfo& info) {
    if (core_) {
      Core::LaneRef lane = core_->Use(LaneId(info[0]));
      if (lane) lane->NotifyAll();
    }
    return info.Env().Undefined();
  }

  // Marks the core closed (every thread sees it: pops stop waiting, pushes fail) and unregisters it.
  Napi::Value Close(const Napi::CallbackInfo& info) {
    if (core_) {
      core_->Close();
      Registry::Get().Remove(id_);
    }
    return info.Env().Undefined();
  }

  // Drops this handle's reference (the rings are freed when the last thread lets go).
  Napi::Value Release(const Napi::CallbackInfo& info) {
    core_.reset();
    return info.Env().Undefined();
  }

  std::shared_ptr<Core> core_;
  napi_env env_ = nullptr;
  uint32_t id_ = 0;
  bool owner_ = false;
};

// setThreadCpus([cpu, ...]): pins the calling thread (true); false where the platform cannot pin threads;
// throws with the reason when the OS refuses.
static Napi::Value SetThreadCpusJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsArray()) {
    Napi::TypeError::New(env, "setThreadCpus expects an array of CPU numbers").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  if (!kCanPinThreads) return Napi::Boolean::New(env, false);
  Napi::Array a = info[0].As<Napi::Array>();
  std::vector<int> cpus;
  for (uint32_t i = 0; i < a.Length(); i++) cpus.push_back(a.Get(i).As<Napi::Number>().Int32Value());
  std::string err = SetThreadCpus(cpus);
  if (!err.empty()) {
    Napi::Error::New(env, err).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  return Napi::Boolean::New(env, true);
}

// threadCpus(): the CPUs the calling thread may run on.
static Napi::Value ThreadCpusJs(const Napi::CallbackInfo& info) {
  std::vector<int> cpus = ThreadCpus();
  Napi::Array a = Napi::Array::New(info.Env(), cpus.size());
  for (uint32_t i = 0; i < cpus.size(); i++) a.Set(i, Napi::Number::New(info.Env(), cpus[i]));
  return a;
}

Addon::Addon(Napi::Env env, Napi::Object exports) {
  Napi::Function ctor = CoreHandle::Define(env);
  DefineAddon(exports, {InstanceValue("Core", ctor, napi_enumerable)});
  exports.Set("setThreadCpus", Napi::Function::New(env, SetThreadCpusJs, "setThreadCpus"));
  exports.Set("threadCpus", Napi::Function::New(env, ThreadCpusJs, "threadCpus"));
  exports.Set("abi", Napi::Number::New(env, 11));  // native/loader.ts BINDING_ABI
}

}  // namespace eventlane

using eventlane::Addon;
NODE_API_ADDON(Addon)
