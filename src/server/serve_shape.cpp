#include "server/serve_shape.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "model/kv_cache.h"
#include "util/run_limits.h"

namespace fgemma::server {

MachineFacts ReadMachineFacts() {
  MachineFacts f;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    f.cores = CPU_COUNT(&set);
  } else {
    f.cores = static_cast<int>(std::thread::hardware_concurrency());
  }
  f.cores = std::max(f.cores, 1);
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib) {
    std::getline(meminfo, unit);
    if (key == "MemAvailable:") {
      f.available_bytes = kib * 1024;
      break;
    }
  }
  return f;
}

namespace {
uint64_t SessionBytes(const ModelConfig& config, size_t context) {
  return KvCache::BytesFor(config, context) + kSessionOverheadBytes;
}

std::string MiB(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }
}  // namespace

ServeShape ResolveServeShape(int threads, size_t sessions, size_t context, const ModelConfig& config,
                             const MachineFacts& facts) {
  ServeShape s;
  std::ostringstream why;
  s.threads = threads;
  if (threads == 0) {
    s.threads = std::clamp(facts.cores, 1, static_cast<int>(kMaxThreads));
    why << s.threads << " threads for " << facts.cores << " cores";
  }
  const size_t model_max = static_cast<size_t>(std::max(config.max_position_embeddings, 1));
  const uint64_t budget = facts.available_bytes / 2;  // the rest: the OS, the page cache, requests
  s.context = context;
  if (context == 0) {
    s.context = std::min(kAutoContext, model_max);
    while (facts.available_bytes > 0 && s.context > kAutoMinContext && SessionBytes(config, s.context) > budget)
      s.context /= 2;
    why << (why.tellp() > 0 ? "; " : "") << "context " << s.context;
  }
  s.session_bytes = SessionBytes(config, s.context);
  s.sessions = sessions;
  if (sessions == 0) {
    if (facts.available_bytes == 0) {
      s.sessions = 2;
      why << (why.tellp() > 0 ? "; " : "") << "2 sessions (available memory unknown)";
    } else {
      s.sessions = static_cast<size_t>(std::clamp<uint64_t>(budget / s.session_bytes, 1, kAutoMaxSessions));
      why << (why.tellp() > 0 ? "; " : "") << s.sessions << " sessions of ~" << MiB(s.session_bytes) << " in half of "
          << MiB(facts.available_bytes) << " available";
    }
  }
  s.basis = why.str();
  return s;
}

}  // namespace fgemma::server
