#include "common/results.hpp"

#include "common/exercise.hpp"

#include "common/device_info.hpp"
#include "common/output_file.hpp"

#include <cuda_runtime.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <stdexcept>

namespace common {

void launch_trap_kernel();  // fault.cu

namespace {

struct Journal {
  std::FILE* file = nullptr;
  std::string path;
  bool warned = false;
};
Journal& journal() {
  static Journal j;
  return j;
}

std::string& unusable_reason() {
  static std::string reason;
  return reason;
}

}  // namespace

void RowList::push_back(const ResultRow& r) {
  rows_.push_back(r);
  Journal& j = journal();
  if (!j.file) return;
  const std::string line = to_csv_line(r) + "\n";
  if (std::fputs(line.c_str(), j.file) < 0 || std::fflush(j.file) != 0) {
    // the final CSV is still attempted at the end; the journal only guards against a crash
    if (!j.warned) std::cerr << "warning: cannot append to '" << j.path << "': " << std::strerror(errno) << "\n";
    j.warned = true;
  }
}

std::string journal_path(const std::string& csv_path) { return csv_path + ".partial"; }

void open_row_journal(const std::string& csv_path) {
  close_row_journal(false);
  Journal& j = journal();
  j.path = journal_path(csv_path);
  j.warned = false;
  j.file = std::fopen(j.path.c_str(), "w");
  if (!j.file) throw std::runtime_error("cannot create '" + j.path + "': " + std::strerror(errno));
  for (std::size_t i = 0; i < csv_columns().size(); ++i)
    std::fprintf(j.file, "%s%s", i ? "," : "", csv_columns()[i].c_str());
  std::fputc('\n', j.file);
  std::fflush(j.file);
}

void close_row_journal(bool remove_file) {
  Journal& j = journal();
  if (!j.file) return;
  std::fclose(j.file);
  j.file = nullptr;
  if (remove_file) std::remove(j.path.c_str());
}

const std::string& gpu_unusable_reason() { return unusable_reason(); }

bool run_guarded(ResultRow& r, bool needs_gpu, const std::function<void()>& body, const Needs& needs) {
  if (needs_gpu && !unusable_reason().empty()) {
    r.verdict = Verdict::skip("device unusable after an earlier error (" + unusable_reason() + ")");
    return false;
  }
  try {
    if (needs_gpu && needs.any()) require(needs);
    if (const char* f = std::getenv("COURSE_FAIL_VERSION"); f && *f) {
      const std::string spec = f;
      if (spec == r.version) throw std::runtime_error("injected failure (COURSE_FAIL_VERSION=" + spec + ")");
      if (spec == r.version + ":trap" && needs_gpu) launch_trap_kernel();
      if (spec == r.version + ":abort") std::abort();  // a crash: the journal must keep the rows before it
    }
    body();
    if (needs_gpu) check_device_stubs();  // a handout's device stub ran: its values meant nothing
    return true;
  } catch (const NotImplemented& e) {  // a handout's stub: its own status, and it touched no device state
    r.verdict = not_implemented_verdict(e);
    r.stats = BenchStats{};
    return false;
  } catch (const Unsupported& e) {  // hardware this GPU lacks: checked before any launch
    r.verdict = Verdict::skip(e.what());
    r.stats = BenchStats{};
    return false;
  } catch (const std::exception& e) {
    r.verdict = Verdict::fail(e.what());
    r.stats = BenchStats{};
    // a check that failed on the placeholder values of a device stub: the stub, not a wrong answer
    try {
      if (needs_gpu) check_device_stubs();
    } catch (const NotImplemented& stub) {
      r.verdict = not_implemented_verdict(stub);
    }
  }
  if (needs_gpu) {
    // A launch error is cleared by reading it; an error that poisons the context (illegal
    // address, trap) is returned again by every later call.
    (void)cudaGetLastError();
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess && cudaDeviceSynchronize() != cudaSuccess) {
      unusable_reason() = std::string(cudaGetErrorName(e)) + " in " + r.version;
      std::cerr << "error: " << r.version << " left the device unusable (" << cudaGetErrorString(e)
                << "); the remaining GPU rows are skipped\n";
    }
  }
  return false;
}

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> cols = {"subproject",
                                                "kind",
                                                "version",
                                                "role",
                                                "idea",
                                                "n",
                                                "params",
                                                "median_ms",
                                                "min_ms",
                                                "max_ms",
                                                "noise",
                                                "samples",
                                                "metric",
                                                "metric_unit",
                                                "pct_of_ceiling",
                                                "ceiling",
                                                "speedup_vs_cpu",
                                                "speedup_vs_prev",
                                                "speedup_vs_library",
                                                "predicted_ms",
                                                "metrics",
                                                "status",
                                                "detail",
                                                "device",
                                                "cuda",
                                                "git_sha"};
  return cols;
}

std::string csv_escape(const std::string& f) {
  if (f.find_first_of(",\"\n\r") == std::string::npos) return f;
  std::string out = "\"";
  for (char c : f) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

static std::string num(double v) {
  if (std::isnan(v)) return "";
  std::ostringstream os;
  os << std::setprecision(6) << v;
  return os.str();
}

std::string to_csv_line(const ResultRow& r) {
  const bool timed = r.stats.samples > 0;
  const std::vector<std::string> f = {r.subproject,
                                      r.kind,
                                      r.version,
                                      r.role,
                                      r.idea,
                                      std::to_string(r.n),
                                      r.params,
                                      timed ? num(r.stats.median_ms) : "",
                                      timed ? num(r.stats.min_ms) : "",
                                      timed ? num(r.stats.max_ms) : "",
                                      timed ? num(r.stats.noise) : "",
                                      std::to_string(r.stats.samples),
                                      num(r.metric),
                                      r.metric_unit,
                                      num(r.pct_of_ceiling),
                                      r.ceiling,
                                      num(r.speedup_vs_cpu),
                                      num(r.speedup_vs_prev),
                                      num(r.speedup_vs_library),
                                      num(r.predicted_ms),
                                      format_metrics(r.metrics),
                                      status_name(r.verdict.status),
                                      r.verdict.detail,
                                      r.device,
                                      r.cuda,
                                      r.git_sha};
  std::string line;
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (i) line += ',';
    line += csv_escape(f[i]);
  }
  return line;
}

void write_csv_atomic(const std::string& path, const std::vector<ResultRow>& rows) {
  write_file_atomic(path, [&](std::ostream& os) {
    for (std::size_t i = 0; i < csv_columns().size(); ++i) os << (i ? "," : "") << csv_columns()[i];
    os << "\n";
    for (const auto& r : rows) os << to_csv_line(r) << "\n";
  });
}

std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c != '"')
        field += c;
      else if (i + 1 < text.size() && text[i + 1] == '"')
        field += text[++i];
      else
        quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
    } else if (c == '\n') {
      row.push_back(field);
      field.clear();
      rows.push_back(row);
      row.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  if (!field.empty() || !row.empty()) {
    row.push_back(field);
    rows.push_back(row);
  }
  return rows;
}

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream is(path, std::ios::binary);
  if (!is) throw std::runtime_error("cannot read CSV '" + path + "'");
  std::ostringstream text;
  text << is.rdbuf();
  return parse_csv(text.str());
}

ResultRow make_row(const std::string& subproject, const std::string& version, const std::string& idea, std::int64_t n,
                   const std::string& params, const std::string& device, const std::string& role,
                   const std::string& kind) {
  ResultRow r;
  r.subproject = subproject;
  r.kind = kind;
  r.role = role;
  r.version = version;
  r.idea = idea;
  r.n = n;
  r.params = params;
  r.device = device;
  r.cuda = cuda_runtime_version();
  r.git_sha = git_sha();
  return r;
}

int finish_run(std::ostream& os, const std::string& name, const RowList& rows, const std::string& csv_path) {
  return finish_run(os, name, rows.all(), csv_path);
}

int finish_run(std::ostream& os, const std::string& name, const std::vector<ResultRow>& rows,
               const std::string& csv_path) {
  if (!csv_path.empty()) {
    try {
      write_csv_atomic(csv_path, rows);
    } catch (const std::exception& e) {
      close_row_journal(false);
      throw std::runtime_error(std::string(e.what()) + " (the finished rows are in '" + journal_path(csv_path) + "')");
    }
    close_row_journal(true);
    os << "\nwrote " << rows.size() << " rows to " << csv_path << "\n";
  }
  int pass = 0, fail = 0, skip = 0, missing = 0;
  for (const auto& r : rows)
    if (r.kind != "meta") switch (r.verdict.status) {
        case Status::pass: ++pass; break;
        case Status::fail: ++fail; break;
        case Status::not_implemented: ++missing; break;
        case Status::skipped: ++skip; break;
      }
  os << "\n" << name << ": " << pass << " PASS, " << fail << " FAIL, ";
  if (missing) os << missing << " NOT IMPLEMENTED, ";
  os << skip << " skipped\n";
  if (fail) return 1;
  // COURSE_SKIP_EXIT=N with COURSE_SKIP_VERSION=name (set by the per-version CTest cases): when
  // no row of that version passed (no GPU, a handout's stub, a library not found) the run exits
  // N, which CTest reports as skipped: the reference rows the driver adds must not make it a pass
  const char* code = std::getenv("COURSE_SKIP_EXIT");
  if (code && *code) {
    const char* only = std::getenv("COURSE_SKIP_VERSION");
    int version_pass = 0;
    for (const auto& r : rows)
      if (r.kind != "meta" && is_pass(r) && (!only || !*only || r.version == only)) ++version_pass;
    if (version_pass == 0) {
      os << name << ": no row of " << (only && *only ? only : "this run") << " passed: reported as skipped\n";
      return std::atoi(code);
    }
  }
  return 0;
}

static void check_metric_text(const std::string& s, const char* what) {
  if (s.find_first_of("[]=;") != std::string::npos)
    throw std::invalid_argument(std::string("metric ") + what + " '" + s + "' holds one of [ ] = ;");
}

ResultRow& ResultRow::add_metric(const std::string& name, double value, const std::string& unit) {
  check_metric_text(name, "name");
  check_metric_text(unit, "unit");
  if (name.empty()) throw std::invalid_argument("metric without a name");
  metrics.push_back({name, value, unit});
  return *this;
}

double ResultRow::metric_named(const std::string& name) const {
  for (const auto& m : metrics)
    if (m.name == name) return m.value;
  return kNoValue;
}

std::string format_metrics(const std::vector<Metric>& ms) {
  std::string out;
  for (const auto& m : ms) {
    if (!out.empty()) out += ';';
    out += m.name + "[" + m.unit + "]=" + num(m.value);
  }
  return out;
}

std::vector<Metric> parse_metrics(const std::string& s) {
  std::vector<Metric> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::size_t end = s.find(';', pos);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(pos, end - pos);
    const std::size_t open = item.find('['), close = item.find("]="), eq = item.find('=');
    if (open == std::string::npos || close == std::string::npos || open == 0 || close < open || eq != close + 1)
      throw std::invalid_argument("metrics: '" + item + "' is not name[unit]=value");
    Metric m{item.substr(0, open), kNoValue, item.substr(open + 1, close - open - 1)};
    const std::string v = item.substr(eq + 1);
    if (!v.empty()) {
      char* stop = nullptr;
      m.value = std::strtod(v.c_str(), &stop);
      if (stop == v.c_str() || *stop)
        throw std::invalid_argument("metrics: value '" + v + "' of " + m.name + " is not a number");
    }
    out.push_back(m);
    pos = end + 1;
  }
  return out;
}

void fill_ratios(const std::vector<ResultRow*>& group,
                 const std::function<std::string(const std::string&)>& builds_on) {
  double cpu = kNoValue, lib = kNoValue, prev = kNoValue;
  for (const ResultRow* r : group) {
    if (!r->stats.samples) continue;
    if (r->role == "reference" && std::isnan(cpu)) cpu = r->stats.median_ms;
    if (r->role == "library" && std::isnan(lib)) lib = r->stats.median_ms;
  }
  std::vector<std::pair<std::string, double>> seen;  // version -> time, for builds_on
  for (ResultRow* r : group) {
    if (!r->stats.samples) continue;
    const double t = r->stats.median_ms;
    r->speedup_vs_cpu = cpu / t;
    r->speedup_vs_library = lib / t;
    if (r->role == "library") continue;
    double base = prev;
    if (builds_on) {
      const std::string b = builds_on(r->version);
      for (const auto& [name, ms] : seen)
        if (!b.empty() && name == b) base = ms;
    }
    r->speedup_vs_prev = base / t;
    prev = t;
    seen.push_back({r->version, t});
  }
}

bool is_pass(const ResultRow& r) { return r.verdict.ok(); }
bool is_fail(const ResultRow& r) { return r.verdict.failed(); }

std::string git_sha() {
  const char* s = std::getenv("COURSE_GIT_SHA");
  return s && *s ? s : "unknown";
}

std::string format_fixed(double v, int prec) {
  if (std::isnan(v)) return "-";
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

static std::string size_label(std::int64_t n) {
  for (int k = 3; k < 40; ++k) {
    const std::int64_t p = std::int64_t{1} << k;
    if (n == p) return "2^" + std::to_string(k);
    if (n == p - 3) return "2^" + std::to_string(k) + "-3";
    if (n > p && n < p + 100) return "2^" + std::to_string(k) + "+" + std::to_string(n - p);
  }
  return std::to_string(n);
}

void print_table(std::ostream& os, const std::vector<ResultRow>& rows) {
  os << std::left << std::setw(24) << "version" << std::setw(10) << "n" << std::setw(20) << "params" << std::right
     << std::setw(11) << "median ms" << std::setw(7) << "noise" << std::setw(11) << "metric" << std::setw(8) << "unit"
     << std::setw(8) << "%ceil" << std::setw(9) << "xCPU" << std::setw(8) << "xprev" << std::setw(7) << "xlib"
     << std::setw(11) << "pred ms" << "  "
     << "check\n";
  for (const auto& r : rows) {
    if (r.kind == "meta") continue;  // printed by the driver as its header
    const bool timed = r.stats.samples > 0;
    os << std::left << std::setw(24) << r.version << std::setw(10) << size_label(r.n) << std::setw(20) << r.params
       << std::right << std::setw(11) << (timed ? format_fixed(r.stats.median_ms, 4) : "-") << std::setw(7)
       << (timed ? format_fixed(100 * r.stats.noise, 1) + "%" : "-") << std::setw(11) << format_fixed(r.metric, 1)
       << std::setw(8) << r.metric_unit << std::setw(8) << format_fixed(r.pct_of_ceiling, 1) << std::setw(9)
       << format_fixed(r.speedup_vs_cpu, 1) << std::setw(8) << format_fixed(r.speedup_vs_prev, 2) << std::setw(7)
       << format_fixed(r.speedup_vs_library, 2) << std::setw(11) << format_fixed(r.predicted_ms, 4) << "  " << r.verdict
       << "\n";
  }
}

}  // namespace common
