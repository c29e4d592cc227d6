// What `fgemma serve` runs when --threads, --sessions or --context are left at 0 ("fit the
// machine"): threads from the cores this process may use, the context and the number of sessions
// from the memory left once the model is loaded (docs/server.md "Sizing").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "model/config.h"

namespace fgemma::server {

// The machine as the process sees it.
struct MachineFacts {
  int cores = 1;                // CPUs this process may run on (its affinity mask)
  uint64_t available_bytes = 0; // MemAvailable of /proc/meminfo (0: unknown)
};
MachineFacts ReadMachineFacts();

// Sessions up to which sharing passes still pays (each pass reads the weights once for all of its
// sessions' rows; past ~8 rows of drafts each, passes are compute-bound) and the context a session
// gets unless memory is short (a function-calling prompt with its catalog stays well inside it).
inline constexpr size_t kAutoMaxSessions = 8;
inline constexpr size_t kAutoContext = 4096;
inline constexpr size_t kAutoMinContext = 512;
// Beside its KV cache a session allocates its forward buffers, its head's logits and scratch and
// its caller's state: measured for the 270m as 94 MB of address space a session at context 4096
// (VmSize with 8 sessions against 1), of which the KV cache is 42 MB. Counted as this much more
// (what a session touches at most; idle, 14 MB of it are resident).
inline constexpr uint64_t kSessionOverheadBytes = uint64_t{50} << 20;

struct ServeShape {
  int threads = 1;
  size_t sessions = 1;
  size_t context = kAutoContext;
  uint64_t session_bytes = 0;  // the estimate a session was sized by
  std::string basis;           // why, for the start-up line ("" when nothing was chosen)
};

// `threads`, `sessions`, `context`: the flags (0 = choose). Chosen values: threads = the cores; the
// context kAutoContext (at most the model's), halved down to kAutoMinContext while one session
// would take more than half the available memory; sessions as many as fit in half of it, 1 to
// kAutoMaxSessions (2 when the available memory is unknown). Values given are kept as they are.
ServeShape ResolveServeShape(int threads, size_t sessions, size_t context, const ModelConfig& config,
                             const MachineFacts& facts);

}  // namespace fgemma::server
