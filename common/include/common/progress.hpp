// A progress line for long sweeps, on stderr: redrawn in place on a terminal, a plain line at
// most every few seconds in logs.
#pragma once
#include <chrono>
#include <string>

namespace common {

class Progress {
 public:
  Progress(int total, std::string label);
  ~Progress();
  void step(const std::string& what);

 private:
  int total_, done_ = 0;
  std::string label_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_print_;
};

}  // namespace common
