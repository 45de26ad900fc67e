// The host side of the multi-GPU sort that needs no GPU and no NCCL (multi_gpu_sort.hpp).
#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "stream_compaction/multi_gpu_sort.hpp"

namespace StreamCompaction {
namespace MultiGpu {
namespace {

int whole_number(const char* name, const char* text) {
  const std::string s(text);
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
    throw std::invalid_argument(std::string(name) + "='" + s + "' is not a whole number");
  return std::stoi(s);
}

}  // namespace

LaunchEnv launch_env(const std::function<const char*(const char*)>& getenv_fn) {
  struct Scheme {
    const char *rank, *world, *local;
  };
  static const Scheme schemes[] = {
      {"RANK", "WORLD_SIZE", "LOCAL_RANK"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
      {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
  };
  for (const auto& s : schemes) {
    const char* r = getenv_fn(s.rank);
    const char* w = getenv_fn(s.world);
    if (!r && !w) continue;
    if (!r || !w)
      throw std::invalid_argument(std::string(r ? s.world : s.rank) + " is not set but " + (r ? s.rank : s.world) +
                                  " is: a launcher sets both");
    LaunchEnv e;
    e.rank = whole_number(s.rank, r);
    e.world = whole_number(s.world, w);
    if (e.world < 1) throw std::invalid_argument(std::string(s.world) + "=" + w + ": a world has at least one rank");
    if (e.rank >= e.world)
      throw std::invalid_argument(std::string(s.rank) + "=" + r + " is not below " + s.world + "=" + w);
    const char* l = getenv_fn(s.local);
    e.local_rank = l ? whole_number(s.local, l) : e.rank;  // one machine when the launcher does not say
    e.source = std::string(s.rank) + "/" + s.world + (l ? std::string("/") + s.local : std::string());
    return e;
  }
  return {};
}

std::string to_hex(const void* bytes, std::size_t size) {
  static const char digits[] = "0123456789abcdef";
  const auto* b = static_cast<const unsigned char*>(bytes);
  std::string s(2 * size, '0');
  for (std::size_t i = 0; i < size; ++i) {
    s[2 * i] = digits[b[i] >> 4];
    s[2 * i + 1] = digits[b[i] & 15];
  }
  return s;
}

void from_hex(const std::string& text, void* bytes, std::size_t size) {
  auto value = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw std::invalid_argument(std::string(kUniqueIdVariable) + ": '" + std::string(1, c) + "' is not a hex digit");
  };
  if (text.size() != 2 * size)
    throw std::invalid_argument(std::string(kUniqueIdVariable) + " holds " + std::to_string(text.size()) +
                                " characters, a unique id is " + std::to_string(2 * size) + " hex digits");
  auto* b = static_cast<unsigned char*>(bytes);
  for (std::size_t i = 0; i < size; ++i)
    b[i] = static_cast<unsigned char>(16 * value(text[2 * i]) + value(text[2 * i + 1]));
}

std::vector<std::uint64_t> choose_splitters(std::vector<std::uint64_t> samples, int parts) {
  if (parts < 1) throw std::invalid_argument("choose_splitters: " + std::to_string(parts) + " parts");
  std::sort(samples.begin(), samples.end());
  std::vector<std::uint64_t> s(parts - 1, 0);
  if (samples.empty()) return s;
  for (int i = 1; i < parts; ++i) s[i - 1] = samples[samples.size() * i / parts];
  return s;
}

Dist parse_dist(const std::string& text) {
  for (Dist d : {Dist::uniform, Dist::few, Dist::sorted, Dist::reversed})
    if (text == dist_name(d)) return d;
  throw std::invalid_argument("--dist: '" + text + "' is not one of uniform, few, sorted, reversed");
}

const char* dist_name(Dist d) {
  switch (d) {
    case Dist::few: return "few";
    case Dist::sorted: return "sorted";
    case Dist::reversed: return "reversed";
    case Dist::uniform:
    default: return "uniform";
  }
}

}  // namespace MultiGpu
}  // namespace StreamCompaction
