// A one-line progress bar on stderr, redrawn in place, drawn only when stderr is a terminal (logs
// and pipes stay clean). `fgemma convert` has its own in MB (cmd_convert.cpp); this one counts items.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace fgemma::cli {

class ItemProgressBar {
 public:
  // `unit` names what is counted ("rows").
  explicit ItemProgressBar(std::string unit) : enabled_(isatty(STDERR_FILENO) != 0), unit_(std::move(unit)) {}
  void Update(uint64_t done, uint64_t total) {
    if (!enabled_ || total == 0) return;
    const int permille = static_cast<int>(done * 1000 / total);
    if (permille == last_ && done != total) return;  // redraw only when the figure changes
    last_ = permille;
    constexpr int kWidth = 40;
    const int filled = permille * kWidth / 1000;
    std::fprintf(stderr, "\r[%.*s%*s] %5.1f%%  %llu / %llu %s", filled, "########################################", kWidth - filled, "",
                 permille / 10.0, static_cast<unsigned long long>(done), static_cast<unsigned long long>(total), unit_.c_str());
    std::fflush(stderr);
  }
  // Ends the bar's line (before anything else is written to stderr).
  void Finish() {
    if (enabled_ && last_ >= 0) std::fputc('\n', stderr);
    last_ = -1;
  }

 private:
  bool enabled_;
  std::string unit_;
  int last_ = -1;
};

}  // namespace fgemma::cli
