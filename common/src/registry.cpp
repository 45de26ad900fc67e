#include "common/registry.hpp"

#include "common/results.hpp"

namespace common {

void write_registry_csv(std::ostream& os, const std::vector<const Entry*>& all) {
  os << "kind,id,version,file,idea,role,runs_on,needs\n";  // kind: what every course CSV says first
  for (const Entry* v : all)
    os << "registry," << csv_escape(v->id) << ',' << csv_escape(v->name) << ',' << csv_escape(v->file) << ','
       << csv_escape(v->idea) << ',' << role_name(v->role) << ',' << (v->needs_gpu ? "gpu" : "cpu") << ','
       << csv_escape(v->needs.any() ? describe(v->needs) : "") << '\n';
}

}  // namespace common
