// Reader of PCL's recorded NDT results (pcl_ndt_reference/*.txt, the RESULT line).
#include <fstream>
#include <sstream>

#include "ndt_graph/ndt.hpp"

namespace ndt {

const std::vector<ReferencePair>& reference_pairs() {
  static const std::vector<ReferencePair> pairs = {
      {"room_tutorial",
       "pcl_room_scan/room_scan1.pcd",
       "pcl_room_scan/room_scan2.pcd",
       Filter::none,
       Filter::approx,
       0.2f,
       {1.79387, 0.720047, 0, 0, 0, 0.6931}},
      {"koide_vg02_both",
       "koide_ndt_pair/251370668.pcd",
       "koide_ndt_pair/251371071.pcd",
       Filter::voxel,
       Filter::voxel,
       0.2f,
       {}},
      {"koide_unfiltered",
       "koide_ndt_pair/251370668.pcd",
       "koide_ndt_pair/251371071.pcd",
       Filter::none,
       Filter::none,
       0,
       {}},
      {"cupcl_identity", "cupcl_samples/test_Q.pcd", "cupcl_samples/test_P.pcd", Filter::none, Filter::none, 0, {}},
      {"kitti00_0_1_vg02",
       "kitti00_patchworkpp/000000.bin",
       "kitti00_patchworkpp/000001.bin",
       Filter::none,
       Filter::voxel,
       0.2f,
       {}},
  };
  return pairs;
}

PclRecord read_pcl_reference(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw InputError(path + ": cannot open");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("RESULT ", 0) == 0) break;
  if (line.rfind("RESULT ", 0) != 0) throw InputError(path + ": no RESULT line");
  auto after = [&](const std::string& key) {
    const auto p = line.find("\"" + key + "\": ");
    if (p == std::string::npos) throw InputError(path + ": RESULT has no " + key);
    return p + key.size() + 4;
  };
  PclRecord r{};
  try {
    r.iterations = std::stoi(line.substr(after("iterations")));
    r.likelihood = std::stod(line.substr(after("likelihood")));
    std::istringstream ts(line.substr(after("T") + 1));
    for (int k = 0; k < 16; ++k) {
      std::string v;
      if (!std::getline(ts, v, k == 15 ? ']' : ',')) throw InputError(path + ": RESULT's T has fewer than 16 values");
      r.T[k / 4][k % 4] = std::stod(v);
    }
  } catch (const std::logic_error&) {
    throw InputError(path + ": malformed RESULT line");
  }
  return r;
}

}  // namespace ndt
