// The differential test against PCL itself (ndt_graph/pcl_diff.hpp): the cases, the comparison of
// every version with PCL's alignment (live, or replayed from a recording made where PCL is built),
// the verdicts and the reports. PCL's side is pcl_live.cpp.
#include "ndt_graph/pcl_diff.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>

#include "common/linalg.hpp"
#include "common/output_file.hpp"

namespace ndt::pcl_diff {
namespace {

std::string data(const std::string& rel) { return common::data_dir() + "/" + rel; }

std::string fmt(double v, int prec = 4) {
  std::ostringstream os;
  os.precision(prec);
  os << v;
  return os.str();
}

using M4 = double[4][4];
void mul(const M4& a, const M4& b, M4& out) {
  M4 t;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      t[i][j] = 0;
      for (int k = 0; k < 4; ++k) t[i][j] += a[i][k] * b[k][j];
    }
  std::copy(&t[0][0], &t[0][0] + 16, &out[0][0]);
}
void invert_rigid(const M4& a, M4& out) {
  M4 t = {};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) t[i][j] = a[j][i];
  for (int i = 0; i < 3; ++i) t[i][3] = -(t[i][0] * a[0][3] + t[i][1] * a[1][3] + t[i][2] * a[2][3]);
  t[3][3] = 1;
  std::copy(&t[0][0], &t[0][0] + 16, &out[0][0]);
}
void matrix_to_pose(const M4& m, double (&pose)[6]) {
  double m34[3][4];
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) m34[r][c] = m[r][c];
  double rpy[3];
  common::la::matrix_to_euler_xyz(m34, rpy);
  for (int k = 0; k < 3; ++k) {
    pose[k] = m[k][3];
    pose[3 + k] = rpy[k];
  }
}

// A rigid transform with translation <= max_m and rotation <= max_deg, both directions uniform.
void random_motion(std::mt19937_64& rng, double max_m, double max_deg, M4& m) {
  std::normal_distribution<double> n01(0, 1);
  std::uniform_real_distribution<double> u01(0, 1);
  auto unit = [&](double(&v)[3]) {
    double len = 0;
    do {
      for (double& c : v) c = n01(rng);
      len = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    } while (len < 1e-9);
    for (double& c : v) c /= len;
  };
  double axis[3], dir[3];
  unit(axis);
  unit(dir);
  const double angle = max_deg * u01(rng) * 3.14159265358979323846 / 180, dist = max_m * u01(rng);
  const double c = std::cos(angle), s = std::sin(angle), C = 1 - c;  // Rodrigues
  const double x = axis[0], y = axis[1], z = axis[2];
  const double R[3][3] = {{c + x * x * C, x * y * C - z * s, x * z * C + y * s},
                          {y * x * C + z * s, c + y * y * C, y * z * C - x * s},
                          {z * x * C - y * s, z * y * C + x * s, c + z * z * C}};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) m[i][j] = R[i][j];
    m[i][3] = dist * dir[i];
  }
  m[3][0] = m[3][1] = m[3][2] = 0;
  m[3][3] = 1;
}

common::PointCloud moved(const common::PointCloud& in, const double (&pose)[6]) {
  M4 T;
  pose_to_matrix4(pose, T);
  common::PointCloud out;
  out.x.resize(in.size());
  out.y.resize(in.size());
  out.z.resize(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const double p[3] = {in.x[i], in.y[i], in.z[i]};
    float* o[3] = {&out.x[i], &out.y[i], &out.z[i]};
    for (int r = 0; r < 3; ++r) *o[r] = static_cast<float>(T[r][0] * p[0] + T[r][1] * p[1] + T[r][2] * p[2] + T[r][3]);
  }
  return out;
}

std::uint64_t name_hash(const std::string& s) {  // FNV-1a: the same cases on every machine
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

template <class F>
double time_ms(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double max_diff(const float (&a)[12], const std::array<float, 12>& b) {
  double d = 0;
  for (int k = 0; k < 12; ++k) d = std::max(d, std::fabs(double(a[k]) - b[k]));
  return d;
}

std::string key_of(const std::string& pair, const std::string& setting, int index) {
  return pair + "/" + setting + "/" + std::to_string(index);
}

}  // namespace

const std::vector<std::string>& setting_names() {
  static const std::vector<std::string> n = {"recorded", "voxel02", "approx02"};
  return n;
}

std::vector<Setting> settings_of(const ReferencePair& pair, const std::vector<std::string>& names) {
  std::vector<Setting> out;
  for (const std::string& n : names.empty() ? setting_names() : names) {
    Setting s;
    if (n == "recorded")
      s = {n, pair.target_filter, pair.source_filter, kReferenceTargetLeaf, pair.source_leaf};
    else if (n == "voxel02")
      s = {n, Filter::voxel, Filter::voxel, 0.2f, 0.2f};
    else if (n == "approx02")
      s = {n, Filter::approx, Filter::approx, 0.2f, 0.2f};
    else
      throw InputError("unknown filter setting '" + n + "' (recorded, voxel02, approx02)");
    // the same filters as an earlier setting: once
    const bool dup = std::any_of(out.begin(), out.end(), [&](const Setting& o) {
      return o.target_filter == s.target_filter && o.source_filter == s.source_filter &&
             (o.target_filter == Filter::none || o.target_leaf == s.target_leaf) &&
             (o.source_filter == Filter::none || o.source_leaf == s.source_leaf);
    });
    if (!dup) out.push_back(s);
  }
  return out;
}

std::vector<Case> make_cases(const ReferencePair& pair, const Setting& s, int count, std::uint64_t seed, double max_m,
                             double max_deg, const double (&base)[4][4]) {
  std::mt19937_64 rng(seed ^ name_hash(std::string(pair.name) + "/" + s.name));
  std::vector<Case> out;
  for (int i = 0; i < count; ++i) {
    Case c;
    c.index = i;
    M4 m;
    random_motion(rng, max_m, max_deg, m);
    if (i % 2 == 0) {
      matrix_to_pose(m, c.motion);
      std::copy(pair.guess, pair.guess + 6, c.guess);
    } else {
      M4 g;
      mul(base, m, g);
      matrix_to_pose(g, c.guess);
    }
    out.push_back(c);
  }
  return out;
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::agrees: return "agrees";
    case Verdict::differs: return "differs";
    case Verdict::pcl_failure: return "PCL failure";
    case Verdict::both_fail: return "both off the truth";
    case Verdict::rounding: return "rounding";
    case Verdict::own_path: return "own line search";
    case Verdict::skipped: return "skipped";
  }
  return "?";
}

Tolerance tolerance_of(const Version& v) {
  if (v.line_search_candidates > 1) return {kParallelLineSearchCm, kParallelLineSearchDeg, -1};
  return {0.5, 0.05, 1};
}

Divergence first_divergence(const AlignResult& got, const PclAlignment& pcl) {
  Divergence d;
  if (got.trace.empty()) {
    d.text = "this version keeps no trace: its path cannot be compared with PCL's";
    return d;
  }
  std::size_t k = 1;
  float T[12] = {};
  for (; k < got.trace.size() && k <= pcl.trace.size(); ++k) {
    float_transform(got.trace[k].pose, T);
    if (max_diff(T, pcl.trace[k - 1]) > 0) break;
  }
  d.iteration = static_cast<int>(k);
  if (k >= got.trace.size() || k > pcl.trace.size()) {
    d.text = "the same transforms for " + std::to_string(k - 1) + " iterations, then " +
             (got.trace.size() - 1 < pcl.trace.size() ? "this version stops and PCL goes on"
                                                      : "PCL stops and this version goes on");
    return d;  // a stopping decision taken apart on identical transforms is not rounding
  }
  d.rounding = max_diff(T, pcl.trace[k - 1]) <= kRoundingDiff;
  d.text = "iteration " + std::to_string(k) + " is the first whose transform is not PCL's (" +
           fmt(max_diff(T, pcl.trace[k - 1]), 3) +
           (d.rounding ? ", at most " + fmt(kRoundingDiff, 2) + ": rounding" : ", more than rounding") + ")";
  return d;
}

void write_recording(const std::vector<Recorded>& recs, const std::string& path) {
  common::write_file_atomic(path, [&](std::ostream& f) {
    // the guesses handed to PCL were built with this trig: a replay must build them the same way
    f << "# trig " << (float_trig() == FloatTrig::libm ? "libm" : "rounded") << "\n";
    f << "# ndt_pcl_diff recording: PCL's NDT on each case (pair setting case seed source_points iterations likelihood "
         "ms "
         "T[16] truth[16] trace_length trace[12 each])\n";
    f.precision(17);  // doubles round-trip (the truth decides the replayed guesses)
    for (const Recorded& r : recs) {
      f << "CASE " << r.pair << " " << r.setting << " " << r.index << " " << r.seed << " " << r.pcl.source_points << " "
        << r.pcl.iterations << " " << r.pcl.likelihood << " " << r.pcl.ms;
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) f << " " << r.pcl.T[i][j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) f << " " << r.truth[i][j];
      f << " " << r.pcl.trace.size();
      for (const auto& row : r.pcl.trace)
        for (float v : row) f << " " << v;
      f << "\n";
    }
  });
}

std::vector<Recorded> read_recording(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw InputError(path + ": cannot open the recording");
  std::vector<Recorded> out;
  std::string line;
  int lineno = 0;
  while (std::getline(f, line)) {
    ++lineno;
    if (line.rfind("# trig ", 0) == 0) {
      const std::string mine = float_trig() == FloatTrig::libm ? "libm" : "rounded";
      if (line.substr(7) != mine)
        throw InputError(path + ":" + std::to_string(lineno) + ": recorded with --trig " + line.substr(7) +
                         ", replayed with --trig " + mine + ": the guesses would differ");
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    std::string tag;
    Recorded r;
    std::size_t n = 0;
    is >> tag >> r.pair >> r.setting >> r.index >> r.seed >> r.pcl.source_points >> r.pcl.iterations >>
        r.pcl.likelihood >> r.pcl.ms;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) is >> r.pcl.T[i][j];
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) is >> r.truth[i][j];
    is >> n;
    if (!is || tag != "CASE" || n > 100000)
      throw InputError(path + ":" + std::to_string(lineno) +
                       ": not a recording line (CASE pair setting case seed ...)");
    r.pcl.trace.resize(n);
    for (auto& row : r.pcl.trace)
      for (float& v : row) is >> v;
    if (!is) throw InputError(path + ":" + std::to_string(lineno) + ": the trace is cut short");
    std::string rest;
    if (is >> rest)
      throw InputError(path + ":" + std::to_string(lineno) + ": unexpected '" + rest + "' after the trace");
    out.push_back(std::move(r));
  }
  return out;
}

Report run(const Options& o, void (*progress)(const std::string&)) {
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  Report rep;
  std::map<std::string, Recorded> replay;
  if (!o.replay.empty()) {
    for (Recorded& r : read_recording(o.replay)) replay[key_of(r.pair, r.setting, r.index)] = std::move(r);
  } else if (!pcl_built()) {
    pcl_align({}, {}, {});  // throws the reason and the way round it
  }
  // the versions asked for (the reference always)
  std::vector<const Version*> chosen;
  for (const Version& v : versions())
    if (v.role == Role::reference) chosen.push_back(&v);
  for (const std::string& want : o.versions) {
    const auto it = std::find_if(versions().begin(), versions().end(),
                                 [&](const Version& v) { return v.id == want || v.name == want; });
    if (it == versions().end()) throw InputError("--versions: unknown version '" + want + "'");
    if (it->role == Role::reference || it->batched || it->role == Role::library) continue;
    chosen.push_back(&*it);
  }
  for (const std::string& want : o.pairs)
    if (std::none_of(reference_pairs().begin(), reference_pairs().end(),
                     [&](const ReferencePair& p) { return want == p.name; }))
      throw InputError("--pairs: unknown pair '" + want + "'");
  const NdtParams params;
  for (const ReferencePair& pair : reference_pairs()) {
    if (!o.pairs.empty() && std::find(o.pairs.begin(), o.pairs.end(), pair.name) == o.pairs.end()) continue;
    if (!common::file_exists(data(pair.target)) || !common::file_exists(data(pair.source))) {
      rep.missing.push_back(pair.name);
      continue;
    }
    const common::PointCloud raw_target = common::read_point_cloud(data(pair.target));
    const common::PointCloud raw_source = common::read_point_cloud(data(pair.source));
    for (const Setting& s : settings_of(pair, o.settings)) {
      const std::string tag = std::string(pair.name) + "/" + s.name;
      const common::PointCloud target = apply_filter(raw_target, s.target_filter, s.target_leaf);
      if (replay.empty()) {  // the stages, point by point and voxel by voxel
        const CloudDiff ft = compare_filter(raw_target, s.target_filter, s.target_leaf);
        const CloudDiff fs = compare_filter(raw_source, s.source_filter, s.source_leaf);
        const MapDiff md = compare_map(target, static_cast<float>(params.resolution));
        for (const auto& [what, cd] : {std::pair<const char*, const CloudDiff&>{"target", ft}, {"source", fs}}) {
          rep.filter_lines.push_back(
              tag + " " + what + " " + filter_name(what[0] == 't' ? s.target_filter : s.source_filter) + ": " +
              std::to_string(cd.ours) + " points, PCL " + std::to_string(cd.pcl) +
              (cd.same() ? ", identical" : ", " + std::to_string(cd.differing) + " differ: " + cd.first));
          rep.filters_and_maps_agree = rep.filters_and_maps_agree && cd.same();
          say(rep.filter_lines.back());
        }
        rep.filter_lines.push_back(
            tag + " map: " + std::to_string(md.ours) + " voxels, PCL " + std::to_string(md.pcl) +
            (md.same() ? ", identical (inverse covariances within " + fmt(md.max_icov_rel, 2) + ")" : ", " + md.first));
        rep.filters_and_maps_agree = rep.filters_and_maps_agree && md.same();
        say(rep.filter_lines.back());
      }
      const VoxelMap map = build_voxel_map(target, static_cast<float>(params.resolution));
      // the truth: PCL's pose on the unmoved pair (recorded with each case when replaying)
      double base[4][4] = {};
      if (replay.empty()) {
        const common::PointCloud source0 = apply_filter(raw_source, s.source_filter, s.source_leaf);
        const PclAlignment b = pcl_align(target, source0, pair.guess);
        std::copy(&b.T[0][0], &b.T[0][0] + 16, &base[0][0]);
      }
      for (int index = 0; index < o.cases; ++index) {
        const Recorded* rec = nullptr;
        if (!replay.empty()) {
          const auto it = replay.find(key_of(pair.name, s.name, index));
          if (it == replay.end())
            throw InputError(o.replay + ": no recording of " + key_of(pair.name, s.name, index) +
                             " (record with the same --pairs, --settings and at least as many --cases)");
          rec = &it->second;
          if (rec->seed != o.seed)
            throw InputError(o.replay + ": recorded with seed " + std::to_string(rec->seed) + ", not " +
                             std::to_string(o.seed));
          // the base pose the cases were drawn from: the truth of a case with no motion, or undo the motion
          M4 mt;
          const Case c0 = make_cases(pair, s, index + 1, o.seed, o.max_m, o.max_deg, rec->truth).back();
          pose_to_matrix4(c0.motion, mt);
          mul(rec->truth, mt, base);
        }
        const Case c = make_cases(pair, s, index + 1, o.seed, o.max_m, o.max_deg, base).back();
        const common::PointCloud source = apply_filter(moved(raw_source, c.motion), s.source_filter, s.source_leaf);
        M4 mt, minv, truth;
        pose_to_matrix4(c.motion, mt);
        invert_rigid(mt, minv);
        mul(base, minv, truth);
        PclAlignment pr;
        if (rec) {
          pr = rec->pcl;
          if (pr.source_points != source.size())
            throw InputError(o.replay + ": " + key_of(pair.name, s.name, index) + " was recorded on " +
                             std::to_string(pr.source_points) + " source points, this data gives " +
                             std::to_string(source.size()) + " (other data, or other filters)");
        } else {
          pr = pcl_align(target, source, c.guess);
          Recorded r;
          r.pair = pair.name;
          r.setting = s.name;
          r.index = c.index;
          r.seed = o.seed;
          r.pcl = pr;
          std::copy(&truth[0][0], &truth[0][0] + 16, &r.truth[0][0]);
          rep.recorded.push_back(std::move(r));
        }
        double pcl_cm, pcl_deg;
        pose_error(pr.T, truth, pcl_cm, pcl_deg);
        pcl_cm *= 100;
        std::string line = tag + " case " + std::to_string(c.index) + ": PCL " + std::to_string(pr.iterations) +
                           " it, " + fmt(pcl_cm, 3) + " cm / " + fmt(pcl_deg, 3) + " deg from the truth;";
        for (const Version* v : chosen) {
          Row r;
          r.pair = pair.name;
          r.setting = s.name;
          r.version = v->name;
          r.case_index = c.index;
          r.seed = o.seed;
          std::copy(c.motion, c.motion + 6, r.motion);
          std::copy(c.guess, c.guess + 6, r.guess);
          r.pcl_iterations = pr.iterations;
          r.pcl_likelihood = pr.likelihood;
          r.pcl_ms = pr.ms;
          r.pcl_cm_to_truth = pcl_cm;
          r.pcl_deg_to_truth = pcl_deg;
          AlignResult got;
          try {
            if (v->needs_gpu && !common::gpu_unavailable_reason().empty())
              throw InputError(common::no_gpu_verdict().text());
            const std::string unmet = v->needs_gpu ? common::unmet(v->needs) : "";
            if (!unmet.empty()) throw InputError("skipped: " + unmet);
            if (!v->make) throw InputError("skipped: " + v->unavailable);
            auto runner = v->make();
            Problem pv;
            pv.map = &map;
            pv.target = &target;
            pv.source = &source;
            pv.params = v->params_for(params);
            std::copy(c.guess, c.guess + 6, pv.guess);
            runner->prepare(pv);
            runner->run();  // warm-up: first-call costs (module load, graph instantiation) are not the alignment's
            const auto t0 = std::chrono::steady_clock::now();
            runner->run();
            got = runner->result();
            r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          } catch (const std::exception& e) {
            r.verdict = Verdict::skipped;
            r.detail = e.what();
            rep.rows.push_back(r);
            continue;
          }
          r.iterations = got.iterations;
          r.likelihood = got.likelihood;
          pose_error(got.T, pr.T, r.cm_to_pcl, r.deg_to_pcl);
          r.cm_to_pcl *= 100;
          pose_error(got.T, truth, r.cm_to_truth, r.deg_to_truth);
          r.cm_to_truth *= 100;
          const Tolerance tol = tolerance_of(*v);
          const bool close = r.cm_to_pcl <= tol.cm && r.deg_to_pcl <= tol.deg &&
                             (tol.iterations < 0 || std::abs(r.iterations - r.pcl_iterations) <= tol.iterations);
          const bool pcl_off = pcl_cm > kPclFailCm || pcl_deg > kPclFailDeg;
          const bool ours_off = r.cm_to_truth > kPclFailCm || r.deg_to_truth > kPclFailDeg;
          if (close) {
            r.verdict = Verdict::agrees;
          } else {
            r.detail = fmt(r.cm_to_pcl, 3) + " cm, " + fmt(r.deg_to_pcl, 3) + " deg from PCL; " +
                       std::to_string(r.iterations) + " vs " + std::to_string(r.pcl_iterations) + " iterations";
            const Divergence d = first_divergence(got, pr);
            r.detail += "; " + d.text;
            if (o.locate && !rec && v->role == Role::reference && d.iteration > 0 &&
                static_cast<std::size_t>(d.iteration) < got.trace.size())
              r.detail += "; at iteration " + std::to_string(d.iteration - 1) + "'s pose " +
                          pcl_derivatives_at(map, target, source, got.trace[d.iteration - 1].pose);
            // the version's own promise where it takes other steps than PCL by design
            // (the parallel line search: PCL off the truth too, or itself within kOwnPathCm/Deg of it)
            const bool own_path =
                tol.iterations < 0 && (pcl_off || (r.cm_to_truth <= kOwnPathCm && r.deg_to_truth <= kOwnPathDeg));
            r.verdict = d.rounding ? Verdict::rounding
                        : own_path ? Verdict::own_path
                        : pcl_off  ? (ours_off ? Verdict::both_fail : Verdict::pcl_failure)
                                   : Verdict::differs;
          }
          line += " " + v->name + " " + verdict_name(r.verdict) + " (" + fmt(r.cm_to_pcl, 3) + " cm, " +
                  std::to_string(r.iterations) + " it)";
          rep.rows.push_back(r);
        }
        say(line);
      }
    }
  }
  return rep;
}

std::string summary_markdown(const Report& r) {
  struct Acc {
    int cases = 0, agree = 0, rounding = 0, pcl_fail = 0, both = 0, differ = 0, skipped = 0, pcl_off = 0;
    double worst_cm = 0, worst_deg = 0;
    std::string tol, first_differ;
  };
  std::vector<std::string> order;
  std::map<std::string, Acc> acc;
  for (const Row& row : r.rows) {
    if (!acc.count(row.version)) order.push_back(row.version);
    Acc& a = acc[row.version];
    ++a.cases;
    if (row.verdict == Verdict::skipped) {
      ++a.skipped;
      if (a.first_differ.empty()) a.first_differ = row.detail;
      continue;
    }
    if (row.pcl_cm_to_truth > kPclFailCm || row.pcl_deg_to_truth > kPclFailDeg) ++a.pcl_off;
    switch (row.verdict) {
      case Verdict::agrees:
        ++a.agree;
        a.worst_cm = std::max(a.worst_cm, row.cm_to_pcl);
        a.worst_deg = std::max(a.worst_deg, row.deg_to_pcl);
        break;
      case Verdict::rounding:
      case Verdict::own_path: ++a.rounding; break;
      case Verdict::pcl_failure: ++a.pcl_fail; break;
      case Verdict::both_fail: ++a.both; break;
      default:
        ++a.differ;
        if (a.first_differ.empty())
          a.first_differ = row.pair + "/" + row.setting + " case " + std::to_string(row.case_index) + ": " + row.detail;
        break;
    }
  }
  std::ostringstream os;
  os << "| version | tolerance vs PCL | cases | agree | apart by rounding (v6: own line search) | PCL off the truth "
        "(all) | PCL failure, version on "
        "the truth | both off the truth | differ | skipped | worst agreeing "
        "|\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const std::string& name : order) {
    const Acc& a = acc[name];
    const auto it =
        std::find_if(versions().begin(), versions().end(), [&](const Version& v) { return v.name == name; });
    const Tolerance t = tolerance_of(*it);
    os << "| " << name << " | " << fmt(t.cm) << " cm, " << fmt(t.deg) << " deg"
       << (t.iterations >= 0 ? ", +-" + std::to_string(t.iterations) + " it" : "") << " | " << a.cases << " | "
       << a.agree << " | " << a.rounding << " | " << a.pcl_off << " | " << a.pcl_fail << " | " << a.both << " | "
       << a.differ << " | " << a.skipped << " | " << fmt(a.worst_cm, 3) << " cm, " << fmt(a.worst_deg, 3) << " deg |\n";
  }
  for (const std::string& name : order)
    if (!acc[name].first_differ.empty()) os << "\n- " << name << ": " << acc[name].first_differ;
  if (!r.missing.empty()) {
    os << "\n\nPairs not in $COURSE_DATA_DIR (left out):";
    for (const auto& m : r.missing) os << " " << m;
  }
  os << "\n";
  return os.str();
}

void write_csv(const Report& r, const std::string& path) {
  auto six = [](const double(&v)[6]) {
    std::ostringstream os;
    os.precision(9);
    for (int k = 0; k < 6; ++k) os << (k ? " " : "") << v[k];
    return os.str();
  };
  common::write_file_atomic(path, [&](std::ostream& f) {
    f.precision(9);
    f << "kind,pair,setting,case,seed,version,motion,guess,verdict,iterations,pcl_iterations,likelihood,pcl_likelihood,"
         "cm_to_pcl,deg_to_pcl,cm_to_truth,deg_to_truth,pcl_cm_to_truth,pcl_deg_to_truth,ms,pcl_ms,detail\n";
    for (const Row& row : r.rows) {
      std::string detail = row.detail;
      std::replace(detail.begin(), detail.end(), '"', '\'');
      f << "pcl_diff," << row.pair << "," << row.setting << "," << row.case_index << "," << row.seed << ","
        << row.version << "," << six(row.motion) << "," << six(row.guess) << "," << verdict_name(row.verdict) << ","
        << row.iterations << "," << row.pcl_iterations << "," << row.likelihood << "," << row.pcl_likelihood << ","
        << row.cm_to_pcl << "," << row.deg_to_pcl << "," << row.cm_to_truth << "," << row.deg_to_truth << ","
        << row.pcl_cm_to_truth << "," << row.pcl_deg_to_truth << "," << row.ms << "," << row.pcl_ms << ",\"" << detail
        << "\"\n";
    }
  });
}

}  // namespace ndt::pcl_diff
