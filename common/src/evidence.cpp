#include "common/evidence.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>

namespace common::evidence {
namespace {

int g_fd = -1;
std::map<std::string, int> g_seen;  // "version\tkey" -> records so far

// Tabs and line ends would break the record's fields: never in a version name or key.
std::string field(const std::string& s) {
  std::string out = s;
  for (char& c : out)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return out;
}

std::string head(const char* kind, const std::string& version, const std::string& key) {
  const std::string v = field(version), k = field(key);
  const int n = ++g_seen[v + "\t" + k];
  return std::string("E1\t") + kind + "\t" + v + "\t" + (n == 1 ? k : k + "#" + std::to_string(n));
}

void emit(const std::string& line) {
  const std::string text = line + "\n";
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = ::write(g_fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      throw std::runtime_error("--evidence-fd " + std::to_string(g_fd) + ": write failed (" + std::strerror(errno) +
                               ")");
    done += static_cast<std::size_t>(w);
  }
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

void open(int fd) {
  const int flags = fd < 0 ? -1 : ::fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY)
    throw std::runtime_error("--evidence-fd " + std::to_string(fd) + ": not a descriptor open for writing");
  g_fd = fd;
  g_seen.clear();
}

bool enabled() { return g_fd >= 0; }

std::uint64_t fnv1a(const void* data, std::size_t bytes, std::uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

std::uint64_t digest(const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  // four words a step, each word into its own lane: four independent multiply chains the core
  // overlaps (one chain was latency-bound, 70 ms for a 2^26 output; fnv1a's byte loop 0.35 s)
  std::uint64_t lane[4];
  for (int l = 0; l < 4; ++l) lane[l] = (0xcbf29ce484222325ull ^ bytes) + 0x9e3779b97f4a7c15ull * l;
  std::size_t i = 0;
  for (; i + 32 <= bytes; i += 32)
    for (int l = 0; l < 4; ++l) {
      std::uint64_t w;
      std::memcpy(&w, p + i + 8 * l, 8);
      lane[l] = (lane[l] ^ w) * 0x100000001b3ull;
      lane[l] ^= lane[l] >> 29;  // the high bits of a product reach the low ones, which the next word's xor meets
    }
  std::uint64_t h = lane[0];
  for (int l = 1; l < 4; ++l) {  // the lanes in order: a word moved to another lane changes the digest
    h = (h ^ lane[l]) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  return fnv1a(p + i, bytes - i, h);
}

void exact(const std::string& version, const std::string& key, const void* data, std::size_t bytes) {
  if (!enabled()) return;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(digest(data, bytes)));
  emit(head("exact", version, key) + "\t" + std::to_string(bytes) + "\t" + hex);
}

void close(const std::string& version, const std::string& key, const std::vector<double>& values, double atol,
           double rtol, std::size_t max_bad) {
  if (!enabled()) return;
  std::string line = head("close", version, key) + "\t" + number(atol) + "\t" + number(rtol) + "\t" +
                     std::to_string(max_bad) + "\t" + std::to_string(values.size()) + "\t";
  for (std::size_t i = 0; i < values.size(); ++i) line += (i ? "," : "") + number(values[i]);
  emit(line);
}

void bits(const std::string& version, const std::string& key, const std::vector<std::uint8_t>& labels,
          std::size_t max_bad) {
  if (!enabled()) return;
  static const char digits[] = "0123456789abcdef";
  std::string hex;  // four labels a digit, the first label the digit's highest bit
  hex.reserve((labels.size() + 3) / 4);
  for (std::size_t i = 0; i < labels.size(); i += 4) {
    unsigned nibble = 0;
    for (std::size_t b = 0; b < 4; ++b) nibble = nibble << 1 | (i + b < labels.size() && labels[i + b] ? 1u : 0u);
    hex += digits[nibble];
  }
  emit(head("bits", version, key) + "\t" + std::to_string(max_bad) + "\t" + std::to_string(labels.size()) + "\t" + hex);
}

}  // namespace common::evidence
