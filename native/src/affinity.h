// Thread CPU affinity for the calling thread (consumer threads and, at the user's choice, the publishing
// thread). On a machine with few cores, Linux tends to wake a consumer thread on the CPU of the thread that
// woke it, where it waits for the publisher's timeslice; pinning them to different CPUs avoids that.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

namespace eventlane {

#if defined(__linux__)
// Whether this platform can pin threads.
constexpr bool kCanPinThreads = true;

// Pins the calling thread to `cpus`. Returns "" on success, else why it failed.
inline std::string SetThreadCpus(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c < 0 || c >= CPU_SETSIZE) return "cpu " + std::to_string(c) + " is out of range [0, " + std::to_string(CPU_SETSIZE) + ")";
    CPU_SET(c, &set);
  }
  int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (rc != 0) return std::string("pthread_setaffinity_np: ") + std::strerror(rc);
  return "";
}

// The CPUs the calling thread may run on.
inline std::vector<int> ThreadCpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}
#else
// No thread affinity here: callers check kCanPinThreads, and ThreadCpus cannot tell.
constexpr bool kCanPinThreads = false;
inline std::string SetThreadCpus(const std::vector<int>&) { return ""; }
inline std::vector<int> ThreadCpus() { return {}; }
#endif

}  // namespace eventlane
