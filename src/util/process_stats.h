// Process resource figures for reports.
#pragma once

#include <cstdint>

namespace fgemma {

// Peak resident set size of this process so far, in bytes (0 if unknown).
uint64_t PeakRssBytes();
// Current resident set size in bytes (0 if unknown).
uint64_t CurrentRssBytes();
// Monotonic clock in seconds.
double NowSeconds();

}  // namespace fgemma
