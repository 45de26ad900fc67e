// The evidence channel: what a checked run's output was, written to a descriptor the grader opened
// (`--evidence-fd N`), so that the grader decides "correct" outside the student's process. The
// driver checks every version in-process too (its detailed verdict and the fresh-input checks),
// but that check runs linked with the student's code; the grader compares these records with the
// records of its own run of the reference solution on the same input and seed
// (grading/judge/checker_evidence.py), taking the tolerance from the reference's record only.
//
// One record per checked output, one line each, tab-separated (format "E1"):
//   E1 exact <version> <key> <bytes> <digest hex>                 the output's bytes, exactly (digest())
//   E1 close <version> <key> <atol> <rtol> <max_bad> <n> <v,v,..>  values; |v - ref| <= atol + rtol |ref|
//   E1 bits  <version> <key> <max_bad> <n> <hex>                   0/1 labels, at most max_bad differ
// A key names the checked case (its size, input, rule); a second record of the same version and
// key gets "#2" appended, and so on. Tolerances are for two correct outputs (each within the
// in-process tolerance of the truth): twice the in-process one. Without --evidence-fd nothing is
// written and nothing costs anything.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace common::evidence {

// Opens the channel on descriptor `fd` (driver_main, from --evidence-fd); throws
// std::runtime_error naming the descriptor when it is not open for writing.
void open(int fd);
bool enabled();

void exact(const std::string& version, const std::string& key, const void* data, std::size_t bytes);
void close(const std::string& version, const std::string& key, const std::vector<double>& values, double atol,
           double rtol, std::size_t max_bad = 0);
void bits(const std::string& version, const std::string& key, const std::vector<std::uint8_t>& labels,
          std::size_t max_bad);

// The 64-bit FNV-1a hash of `bytes`.
std::uint64_t fnv1a(const void* data, std::size_t bytes, std::uint64_t h = 0xcbf29ce484222325ull);

// The exact records' digest: FNV-1a's step on 8-byte words (each product's high bits folded into
// its low ones) in four lanes that take every fourth word, the lanes folded in order, the length
// in the seed, the tail bytewise. An equality check of outputs the
// grader also has, not a secret: any output with the reference's bytes has the reference's digest.
std::uint64_t digest(const void* data, std::size_t bytes);

}  // namespace common::evidence
