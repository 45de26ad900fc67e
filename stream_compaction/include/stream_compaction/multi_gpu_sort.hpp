// The multi-GPU sort: P processes, one per GPU, sort n 32-bit keys spread over them so that rank
// r ends up holding the r-th slice of the sorted whole (a sample sort over NCCL):
//  1. every rank samples its keys, the samples are all-gathered and every rank picks the same
//     P - 1 splitters from them;
//  2. every rank splits its keys into P buckets by the splitters (count pass + scatter pass);
//  3. the bucket sizes are all-gathered, then one grouped ncclSend/ncclRecv per pair of ranks
//     moves bucket q to rank q (an all-to-all);
//  4. while its buckets travel, a rank sorts the bucket it keeps; then it sorts what it received
//     and merges the two sorted runs.
// Keys equal to a splitter are split by position too (a sample is the pair key, position), so
// even all-equal keys spread evenly; the output is correct whatever the splitters are.
//
// This header holds what the host needs and the tests check without a GPU: who this process is
// (from a launcher's environment), the unique-id text, the splitter choice, the bucket of a key
// and the key generator the driver and the tests share.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#ifdef __CUDACC__
#define SC_HD __host__ __device__
#else
#define SC_HD
#endif

namespace StreamCompaction {
namespace MultiGpu {

// Who this process is. Read from, in order: the course launcher / torchrun (RANK, WORLD_SIZE,
// LOCAL_RANK), Open MPI's mpirun (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK), Slurm's srun
// (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID), MPICH / Intel MPI (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID).
// None set: a world of one. `source` names the variables used. Throws std::invalid_argument on a
// rank outside [0, world), a world < 1 or a value that is not a whole number, naming the variable.
struct LaunchEnv {
  int rank = 0;
  int world = 1;
  int local_rank = 0;  // which GPU of this machine
  std::string source = "none (a world of one)";
};
LaunchEnv launch_env(const std::function<const char*(const char*)>& getenv_fn);

// The environment variable that carries the NCCL unique id, as hex, from the launcher to its ranks.
constexpr const char* kUniqueIdVariable = "COURSE_NCCL_UNIQUE_ID";
std::string to_hex(const void* bytes, std::size_t size);
// Throws std::invalid_argument naming the variable when `text` is not exactly 2 * size hex digits.
void from_hex(const std::string& text, void* bytes, std::size_t size);

// A sample: the key in the high half, a position that is unique across ranks in the low half.
SC_HD inline std::uint64_t composite(std::uint32_t key, std::uint64_t position) {
  return (static_cast<std::uint64_t>(key) << 32) | static_cast<std::uint32_t>(position);
}
// Bucket of a key at a position: how many of the parts - 1 (sorted) splitters lie below it.
// Monotone in the key, so bucket order is key order whatever the splitters.
SC_HD inline int bucket_of(std::uint64_t c, const std::uint64_t* splitters, int parts) {
  int lo = 0, hi = parts - 1;  // binary search: first splitter > c
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (splitters[mid] <= c)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}
// Sorts the samples of all ranks and returns the parts - 1 splitters at the quantiles
// (i * size / parts). No samples (every rank empty): all splitters 0, everything in bucket 0...
// which is then correct and trivially balanced.
std::vector<std::uint64_t> choose_splitters(std::vector<std::uint64_t> samples, int parts);

// The keys the driver and the tests sort: key g of a distribution of n, the same on every rank.
enum class Dist { uniform, few, sorted, reversed };
Dist parse_dist(const std::string& text);  // throws std::invalid_argument naming the text
const char* dist_name(Dist d);
SC_HD inline std::uint32_t make_key(Dist d, std::uint64_t seed, std::uint64_t g, std::uint64_t n) {
  std::uint64_t z = (g + 1) * 0x9E3779B97F4A7C15ull + seed * 0xD1B54A32D192ED03ull;  // splitmix64
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  switch (d) {
    case Dist::few: return static_cast<std::uint32_t>(z % 4);  // four values: long runs of equal keys
    case Dist::sorted: return static_cast<std::uint32_t>(g * 0xFFFFFFFFull / (n > 1 ? n - 1 : 1));
    case Dist::reversed: return static_cast<std::uint32_t>((n - 1 - g) * 0xFFFFFFFFull / (n > 1 ? n - 1 : 1));
    case Dist::uniform:
    default: return static_cast<std::uint32_t>(z >> 32);
  }
}
// The slice [begin, end) of the n input keys that rank `rank` of `world` starts with.
inline void owned_range(std::int64_t n, int world, int rank, std::int64_t& begin, std::int64_t& end) {
  begin = n / world * rank + std::min<std::int64_t>(rank, n % world);
  end = begin + n / world + (rank < n % world ? 1 : 0);
}

}  // namespace MultiGpu
}  // namespace StreamCompaction
