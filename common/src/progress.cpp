#include "common/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace common {

Progress::Progress(int total, std::string label)
    : total_(total),
      label_(std::move(label)),
      tty_(isatty(fileno(stderr)) != 0),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

Progress::~Progress() {
  if (tty_ && done_ > 0) std::fputc('\n', stderr);
}

void Progress::step(const std::string& what) {
  ++done_;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_print_).count();
  if (!tty_ && since < 5.0 && done_ != total_) return;
  last_print_ = now;
  const double el = std::chrono::duration<double>(now - start_).count();
  // In a log that holds both streams, what stdout has buffered goes first: a block flushed
  // later would put this line in the middle of one of its lines.
  if (!tty_) std::fflush(stdout);
  std::fprintf(stderr, "%s[%s %d/%d, %.0f s] %s%s", tty_ ? "\r" : "", label_.c_str(), done_, total_, el, what.c_str(),
               tty_ ? "\033[K" : "\n");
  std::fflush(stderr);
}

}  // namespace common
