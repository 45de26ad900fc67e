// Snapshots in the Kaggle "Star Cluster Simulations" CSV format: header required, columns
// x,y,z,vx,vy,vz,m[,id]; CRLF tolerated. Anything malformed is rejected with file, line and reason.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "nbody/system.hpp"

namespace nbody {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

Bodies read_snapshot_csv(const std::string& path);
// Parses CSV text already in memory (`name` is used in error messages).
Bodies parse_snapshot_csv(const std::string& text, const std::string& name);
void write_snapshot_csv(const std::string& path, const Bodies& b);
// The snapshot files of a directory (*.csv), sorted by name; throws if there are none.
std::vector<std::string> list_snapshots(const std::string& dir);

}  // namespace nbody
