// Reader of PCL's recorded NDT results (pcl_ndt_reference/*.txt, the RESULT line).
#include <fstream>
#include <sstream>

#include "ndt_graph/ndt.hpp"

namespace ndt {

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
