// ndt_pcl_diff: the differential test against PCL itself (ndt_graph/pcl_diff.hpp) as a tool.
//   ndt_pcl_diff [--pairs a,b] [--settings recorded,voxel02,approx02] [--versions all|id,...]
//                [--cases N] [--seed S] [--max-m M] [--max-deg D] [--csv PATH] [--md PATH] [--no-locate]
// Exit status 0 when every filter and map matches PCL's and every version agrees with PCL within
// its tolerance on every case, or PCL itself is off the truth there (classified, and counted);
// 1 otherwise; 2 for bad flags.
#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/cli.hpp"
#include "common/output_file.hpp"
#include "ndt_graph/pcl_diff.hpp"

using namespace ndt;

namespace {
const char* kUsage =
    "usage: ndt_pcl_diff [--pairs a,b] [--settings recorded,voxel02,approx02] [--versions all|ID,...]\n"
    "                    [--cases N] [--seed S] [--max-m M] [--max-deg D] [--csv PATH] [--md PATH] [--no-locate]\n"
    "                    [--record FILE | --replay FILE] [--trig rounded|libm]\n"
    "Compares ndt_graph's filters, voxel map, CPU reference and versions with PCL's own classes on the\n"
    "sample pairs of $COURSE_DATA_DIR, moved by seeded random rigid transforms and started from seeded\n"
    "random guesses (translation <= --max-m metres, rotation <= --max-deg degrees). --record FILE keeps\n"
    "PCL's side of every case; --replay FILE compares with such a recording where PCL is not built.\n"
    "--trig: the float angles' sine and cosine of every host-side path: rounded (the reference's, the\n"
    "correctly rounded value on every machine) or libm (this C library's sinf/cosf, as PCL's Eigen).\n";
}

int main(int argc, char** argv) {
  pcl_diff::Options o;
  std::string csv, md, record;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw common::UsageError(a + " needs a value");
        return argv[++i];
      };
      if (a == "--pairs")
        o.pairs = common::split(value(), ',');
      else if (a == "--settings")
        o.settings = common::split(value(), ',');
      else if (a == "--versions") {
        const std::string v = value();
        if (v == "all") {
          for (const Version& ver : versions())
            if (ver.role == Role::version && !ver.batched) o.versions.push_back(ver.id);
        } else {
          o.versions = common::split(v, ',');
        }
      } else if (a == "--cases")
        o.cases = static_cast<int>(common::parse_int(value(), a, 1, 100000));
      else if (a == "--seed")
        o.seed = static_cast<std::uint64_t>(common::parse_int(value(), a, 0, INT64_MAX));
      else if (a == "--max-m")
        o.max_m = common::parse_number(value(), a, 0, 100);
      else if (a == "--max-deg")
        o.max_deg = common::parse_number(value(), a, 0, 90);
      else if (a == "--csv")
        csv = value();
      else if (a == "--md")
        md = value();
      else if (a == "--no-locate")
        o.locate = false;
      else if (a == "--replay")
        o.replay = value();
      else if (a == "--record")
        record = value();
      else if (a == "--trig") {
        const std::string v = value();
        if (v != "rounded" && v != "libm") throw common::UsageError("--trig: rounded or libm, not '" + v + "'");
        float_trig() = v == "libm" ? FloatTrig::libm : FloatTrig::rounded;
      } else if (a == "--help" || a == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
      } else
        throw common::UsageError("unknown flag '" + a + "'");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ndt_pcl_diff: %s\n%s", e.what(), kUsage);
    return 2;
  }
  try {
    std::printf(
        "ndt_pcl_diff: seed %llu, %d cases per pair and setting, motions <= %g m / %g deg, data %s, float trig %s\n",
        static_cast<unsigned long long>(o.seed), o.cases, o.max_m, o.max_deg, common::data_dir().c_str(),
        float_trig() == FloatTrig::libm ? "libm (sinf/cosf)" : "rounded");
    std::fflush(stdout);
    const pcl_diff::Report r = pcl_diff::run(o, [](const std::string& line) {
      std::printf("  %s\n", line.c_str());
      std::fflush(stdout);
    });
    if (r.rows.empty()) {
      std::fprintf(stderr, "ndt_pcl_diff: no sample pair in %s (set COURSE_DATA_DIR)\n", common::data_dir().c_str());
      return 1;
    }
    const std::string table = pcl_diff::summary_markdown(r);
    std::printf("\n%s", table.c_str());
    if (!csv.empty()) pcl_diff::write_csv(r, csv);
    if (!record.empty()) {
      if (r.recorded.empty()) throw InputError("--record: nothing to record (a replay records nothing)");
      pcl_diff::write_recording(r.recorded, record);
    }
    if (!md.empty()) {
      std::string text = "# ndt_graph against PCL itself (ndt_pcl_diff)\n\nSeed " + std::to_string(o.seed) + ", " +
                         std::to_string(o.cases) + " cases per pair and filter setting; the float angles' sin/cos " +
                         (float_trig() == FloatTrig::libm ? "of this C library (sinf/cosf, as PCL's Eigen)"
                                                          : "rounded from double (the reference's)") +
                         ".\n\n## Filters and maps\n\n";
      for (const auto& l : r.filter_lines) text += "- " + l + "\n";
      text += "\n## Alignments\n\n" + table;
      common::write_file_atomic(md, text);
    }
    bool ok = r.filters_and_maps_agree;
    for (const auto& row : r.rows)
      ok = ok && row.verdict != pcl_diff::Verdict::differs && row.verdict != pcl_diff::Verdict::both_fail;
    std::printf("ndt_pcl_diff: %s\n", ok ? "every stage and version agrees with PCL (or PCL is off the truth)"
                                         : "DIFFERS from PCL (see above)");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ndt_pcl_diff: %s\n", e.what());
    return 1;
  }
}
