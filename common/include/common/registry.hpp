// The registry core every sub-project's version list shares: the entry type (what every version
// says about itself, in one order), the role a version plays in the ratios (the reference the
// x CPU column divides, the library baseline of x lib, or a step of the ladder), and the
// --version selection with its error. Each sub-project's Version derives from Entry and adds what
// its driver runs; a registry line reads
//   {{id, name, file, idea, role, kOnGpu or kOnCpu[, needs]}, <the sub-project's fields>}
// and the helpers below work on any such list.
#pragma once
#include <algorithm>
#include <cstdio>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/output_file.hpp"
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
  std::string file;  // where its code is, from the sub-project's folder ("src/v5_lookback.cu")
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

// The registry as CSV (id, name, file, idea, role, where, needs): what --list --csv writes, and
// what plot.py's ladder table in the README is made of.
void write_registry_csv(std::ostream& os, const std::vector<const Entry*>& all);

// --list: every entry (id, name, where it runs, idea, file and what it needs beyond a CUDA GPU,
// `note` after the idea where it says more), or with `csv` set, the registry written to that file.
template <class V>
int list_versions(const std::vector<V>& all, const std::string& csv, std::function<std::string(const V&)> note = {}) {
  std::vector<const Entry*> entries;
  for (const auto& v : all) entries.push_back(&v);
  if (!csv.empty()) {
    write_file_atomic(csv, [&](std::ostream& os) { write_registry_csv(os, entries); });
    std::printf("wrote %zu versions to %s\n", entries.size(), csv.c_str());
    return 0;
  }
  std::size_t w = 4;
  for (const auto& v : all) w = std::max(w, v.name.size() + 1);
  std::printf("%-9s%-*s%-5s%s\n", "id", static_cast<int>(w), "name", "gpu", "idea");
  for (const auto& v : all) {
    std::string extra = note ? note(v) : std::string();
    if (v.needs.any()) extra += "  [needs " + describe(v.needs) + "]";
    std::printf("%-9s%-*s%-5s%s  (%s)%s\n", v.id.c_str(), static_cast<int>(w), v.name.c_str(),
                v.needs_gpu ? "yes" : "no", v.idea.c_str(), v.file.c_str(), extra.c_str());
  }
  return 0;
}

}  // namespace common
