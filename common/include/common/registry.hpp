// The registry core every sub-project's version list shares: the entry type (what every version
// says about itself, in one order), the role a version plays in the ratios (the reference the
// x CPU column divides, the library baseline of x lib, or a step of the ladder), and the
// --version selection with its error. Each sub-project's Version derives from Entry and adds what
// its driver runs; a registry line reads
//   {{id, name, idea, role, kOnGpu or kOnCpu[, needs]}, <the sub-project's fields>}
// and the helpers below work on any such list.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/requirements.hpp"

namespace common {

enum class Role { reference, version, library };

inline const char* role_name(Role r) {
  return r == Role::reference ? "reference" : r == Role::library ? "library" : "version";
}

// Where a version runs, for Entry::needs_gpu: without a GPU the driver lists a GPU version as
// skipped with the reason.
constexpr bool kOnGpu = true;
constexpr bool kOnCpu = false;

struct Entry {
  std::string id;    // its step in the ladder ("v5"; "cpu", "omp", "cub" off the ladder): --list, --version
  std::string name;  // unique in the sub-project: the CSV's version column, --version
  std::string idea;  // the one idea it adds, one line
  Role role = Role::version;
  bool needs_gpu = kOnCpu;
  // What it needs beyond a CUDA GPU (common/requirements.hpp): the driver and the tests skip it,
  // with the reason, where the GPU or this build's code for it lacks that.
  Needs needs = {};
};

// The entry named `name_or_id`, or nullptr.
template <class V>
const V* find_version(const std::vector<V>& all, const std::string& name_or_id) {
  for (const auto& v : all)
    if (v.name == name_or_id || v.id == name_or_id) return &v;
  return nullptr;
}

// The versions --version names (by name or id), in registry order; every one when `requested`
// is empty. An unknown name is a UsageError that lists the known ones.
template <class V>
std::vector<const V*> select_versions(const std::vector<V>& all, const std::vector<std::string>& requested) {
  for (const auto& name : requested)
    if (!find_version(all, name)) {
      std::string known;
      for (const auto& v : all) known += " " + v.name;
      throw UsageError("--version: unknown version '" + name + "' (known:" + known + ")");
    }
  std::vector<const V*> out;
  for (const auto& v : all)
    if (requested.empty() || std::find(requested.begin(), requested.end(), v.name) != requested.end() ||
        std::find(requested.begin(), requested.end(), v.id) != requested.end())
      out.push_back(&v);
  return out;
}

// The first entry with this role (the reference, or the library baseline), or nullptr.
template <class V>
const V* with_role(const std::vector<V>& all, Role role) {
  for (const auto& v : all)
    if (v.role == role) return &v;
  return nullptr;
}

}  // namespace common
