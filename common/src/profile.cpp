// --profile (profile.hpp): ncu's raw CSV read into kernels, the kernels summed into a row, and the
// run of one version under ncu in a process of its own, bounded in time.
#include "common/profile.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/environment.hpp"
#include "common/progress.hpp"
#include "common/requirements.hpp"

extern char** environ;

namespace common {

const char* const kNoCounterPermission =
    "no permission to read GPU performance counters (NVreg_RestrictProfilingToAdminUsers): run as root or ask the "
    "admin";
const char* const kNcuNotFound = "ncu not found on PATH";

namespace {

// ---- ncu's raw CSV

constexpr const char* kStallPrefix = "smsp__average_warps_issue_stalled_";
constexpr const char* kStallSuffix = "_per_issue_active.ratio";

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

// A cell as a number: thousands separators dropped; kNoValue for an empty, "n/a" or malformed cell.
double cell_number(const std::string& cell) {
  std::string t;
  for (char c : trim(cell))
    if (c != ',') t += c;
  if (t.empty()) return kNoValue;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !std::isfinite(v)) return kNoValue;
  return v;
}

// The factor taking a value in `unit` to `base` ("byte", "second", "inst") when `unit` is `base`
// with an SI prefix or none ("Kbyte", "usecond"); kNoValue otherwise.
double prefix_factor(const std::string& unit, const std::string& base) {
  if (unit.size() < base.size() || unit.compare(unit.size() - base.size(), base.size(), base) != 0) return kNoValue;
  static const std::map<std::string, double> prefixes = {{"", 1.0},  {"n", 1e-9}, {"u", 1e-6}, {"m", 1e-3},
                                                         {"K", 1e3}, {"M", 1e6},  {"G", 1e9},  {"T", 1e12}};
  const auto it = prefixes.find(unit.substr(0, unit.size() - base.size()));
  return it == prefixes.end() ? kNoValue : it->second;
}

// The factors to the units the summary uses (ns, bytes, instructions, bytes per second), by the
// column's unit and the quantity it holds.
enum class Quantity { time, bytes, rate, count, percent, plain };

double to_base(const std::string& unit_text, Quantity q) {
  const std::string unit = trim(unit_text);
  switch (q) {
    case Quantity::time: {  // to ns
      static const std::map<std::string, std::string> spelled = {
          {"ns", "nsecond"}, {"us", "usecond"}, {"ms", "msecond"}, {"s", "second"}};
      const auto it = spelled.find(unit);
      const double f = prefix_factor(it == spelled.end() ? unit : it->second, "second");
      return std::isnan(f) ? f : f * 1e9;
    }
    case Quantity::bytes: {  // "byte", "Kbyte", "byte/block"
      const auto slash = unit.find('/');
      return prefix_factor(unit.substr(0, slash), "byte");
    }
    case Quantity::rate: {  // "byte/second", "Gbyte/s"
      const auto slash = unit.find('/');
      if (slash == std::string::npos) return kNoValue;
      const std::string per = unit.substr(slash + 1);
      if (per != "second" && per != "s") return kNoValue;
      return prefix_factor(unit.substr(0, slash), "byte");
    }
    case Quantity::count: return unit.empty() ? 1.0 : prefix_factor(unit, "inst");
    case Quantity::percent: return unit.empty() || unit == "%" ? 1.0 : kNoValue;
    case Quantity::plain: return 1.0;
  }
  return kNoValue;
}

// One column of the header: where it is and the factor of its unit.
struct Column {
  int index = -1;
  double factor = 1.0;
  bool present() const { return index >= 0; }
  double read(const std::vector<std::string>& row) const {
    return present() && index < static_cast<int>(row.size()) ? cell_number(row[index]) * factor : kNoValue;
  }
};

bool is_kernel_id(const std::string& cell) {
  const std::string t = trim(cell);
  return !t.empty() && std::all_of(t.begin(), t.end(), [](unsigned char c) { return std::isdigit(c); });
}

double sum_known(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return a + b;
}

// ---- running processes

struct ProcessEnd {
  bool started = false;
  bool timed_out = false;
  int status = -1;  // the exit status
  int signal = 0;   // the signal that ended it, 0 when it exited
};

// Runs argv[0] (a path) with the environment `env`, stdout into `out` and stderr into `err` (the
// same file when `err` is empty), stdin from /dev/null, in a process group of its own so that a
// timeout ends it and whatever it started (ncu and the program it profiles). A child whose parent
// dies is killed with it.
ProcessEnd run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                       const std::string& out, const std::string& err, double timeout_s) {
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  ProcessEnd end;
  const pid_t pid = fork();
  if (pid < 0) return end;
  if (pid == 0) {  // only async-signal-safe calls until exec
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = err.empty() ? o : open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = open("/dev/null", O_RDONLY);
    if (o < 0 || e < 0 || in < 0) _exit(126);
    dup2(in, 0);
    dup2(o, 1);
    dup2(e, 2);
    execve(args[0], args.data(), envp.data());
    const char msg[] = "cannot start the program (execve failed)\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  setpgid(pid, pid);
  end.started = true;
  const auto t0 = std::chrono::steady_clock::now();
  int st = 0;
  while (true) {
    const pid_t done = waitpid(pid, &st, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return end;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
      end.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  end.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  end.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  return end;
}

// The current environment with `name` set to `value` (left as it is when value is empty).
std::vector<std::string> environment_with(const std::string& name, const std::string& value) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e)
    if (value.empty() || !starts_with(*e, name + "=")) env.emplace_back(*e);
  if (!value.empty()) env.push_back(name + "=" + value);
  return env;
}

// A file's text, at most `cap` bytes of its end (a log that filled its disk is still read).
std::string read_text(const std::string& path, std::size_t cap = std::size_t{8} << 20) {
  std::ifstream is(path, std::ios::binary | std::ios::ate);
  if (!is) return "";
  const std::streamoff size = is.tellg();
  const std::streamoff from = size > static_cast<std::streamoff>(cap) ? size - static_cast<std::streamoff>(cap) : 0;
  is.seekg(from);
  std::string text(static_cast<std::size_t>(size - from), '\0');
  is.read(text.data(), size - from);
  return text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream is(text);
  for (std::string line; std::getline(is, line);)
    if (!trim(line).empty()) out.push_back(trim(line));
  return out;
}

// What a log says went wrong, in a line: its first ncu errors, else (`first`: a driver that
// refused its arguments says why first, its usage follows) its first line or its last lines, ncu's
// own progress lines left out; at most 400 characters.
std::string log_tail(const std::string& text, bool first = false) {
  std::string out;
  const auto lines = lines_of(text);
  for (const auto& l : lines)
    if (starts_with(l, "==ERROR==") && out.size() < 400) out += (out.empty() ? "" : " | ") + l;
  for (const auto& l : lines)
    if (first && out.empty() && !starts_with(l, "==")) out = l;
  if (out.empty()) {
    std::vector<std::string> last;
    for (auto it = lines.rbegin(); it != lines.rend() && last.size() < 3; ++it)
      if (!starts_with(*it, "==PROF==") && !starts_with(*it, "==WARNING==")) last.insert(last.begin(), *it);
    for (const auto& l : last) out += (out.empty() ? "" : " | ") + l;
  }
  if (out.empty()) return "it printed nothing";
  return out.size() > 400 ? out.substr(0, 397) + "..." : out;
}

std::string exit_text(const ProcessEnd& e) {
  if (e.signal) return "killed by signal " + std::to_string(e.signal) + " (" + strsignal(e.signal) + ")";
  return "exit status " + std::to_string(e.status);
}

// The verdict of `version`'s rows in a driver CSV: a FAIL first, else a pass, else the first
// other verdict (a skip, a starter body); none when the file or the version's rows are missing.
std::optional<Verdict> version_verdict(const std::string& csv, const std::string& version) {
  // the final CSV, or the row journal of a run that ended before writing it (a crash after the
  // version's row: its verdict is there)
  const std::string path = std::filesystem::exists(csv) ? csv : journal_path(csv);
  if (!std::filesystem::exists(path)) return std::nullopt;
  const auto rows = read_csv(path);
  if (rows.empty()) return std::nullopt;
  const auto& header = rows[0];
  auto col = [&](const char* name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const std::size_t kind = col("kind"), ver = col("version"), status = col("status"), detail = col("detail");
  if (std::max({kind, ver, status, detail}) >= header.size()) return std::nullopt;
  std::optional<Verdict> first, pass;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (r.size() < header.size() || r[ver] != version || r[kind] == "meta") continue;
    Verdict v{Status::skipped, r[detail]};
    try {
      v.status = parse_status(r[status]);
    } catch (const std::invalid_argument&) {
      v = Verdict::fail("its row's status '" + r[status] + "' is not a status");
    }
    if (v.failed()) return v;
    if (v.ok()) pass = v;
    if (!first) first = v;
  }
  return pass ? pass : first;
}

std::string self_executable() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw std::runtime_error("--profile: cannot find this program's own file (/proc/self/exe: " + ec.message() + ")");
  return p.string();
}

bool is_executable_file(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// A folder of its own under $TMPDIR (or /tmp), removed with everything in it at the end.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    // mkdtemp replaces the template's last six characters, which must be 'X'
    std::string templ = std::string(base && *base ? base : "/tmp") + "/course_profile_" + std::string(6, 'X');
    if (!mkdtemp(templ.data()))
      throw std::runtime_error("--profile: cannot make a temporary folder '" + templ + "': " + std::strerror(errno));
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

}  // namespace

NcuTable parse_ncu_raw_csv(const std::string& text) {
  // the table starts at its header; what the program printed before it is not ncu's
  std::size_t start = std::string::npos;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t eol = text.find('\n', pos);
    const std::string line = text.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
    if (starts_with(line, "\"ID\",") || starts_with(line, "ID,")) {
      start = pos;
      break;
    }
    if (eol == std::string::npos) break;
    pos = eol + 1;
  }
  if (start == std::string::npos)
    throw std::runtime_error("no table in ncu's output (no header row starting with \"ID\")");
  const auto rows = parse_csv(text.substr(start));
  const std::vector<std::string>& header = rows[0];
  auto index_of = [&](const std::string& name) {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  };
  // the units row: the first row whose ID cell is empty (ncu writes it right after the header)
  const std::vector<std::string>* units = nullptr;
  if (rows.size() > 1 && !rows[1].empty() && trim(rows[1][0]).empty()) units = &rows[1];
  auto column = [&](const std::string& name, Quantity q) {
    Column c;
    c.index = index_of(name);
    if (!c.present()) return c;
    const std::string unit = units && c.index < static_cast<int>(units->size()) ? (*units)[c.index] : "";
    c.factor = to_base(unit, q);
    if (std::isnan(c.factor)) throw std::runtime_error("column " + name + ": unit '" + unit + "' is not one it reads");
    return c;
  };
  const int name_col = index_of("Kernel Name");
  const Column duration = column("gpu__time_duration.sum", Quantity::time);
  if (!duration.present()) throw std::runtime_error("no gpu__time_duration.sum column in ncu's table");
  const Column dram_read = column("dram__bytes_read.sum", Quantity::bytes),
               dram_write = column("dram__bytes_write.sum", Quantity::bytes),
               dram_total = column("dram__bytes.sum", Quantity::bytes),
               dram_rate = column("dram__bytes.sum.per_second", Quantity::rate),
               achieved = column("sm__warps_active.avg.pct_of_peak_sustained_active", Quantity::percent),
               theoretical = column("sm__maximum_warps_per_active_cycle_pct", Quantity::percent),
               registers = column("launch__registers_per_thread", Quantity::plain),
               smem_static = column("launch__shared_mem_per_block_static", Quantity::bytes),
               smem_dynamic = column("launch__shared_mem_per_block_dynamic", Quantity::bytes),
               spills = column("sass__inst_executed_register_spilling", Quantity::count);
  std::vector<std::pair<std::string, Column>> stalls;
  for (int i = 0; i < static_cast<int>(header.size()); ++i) {
    const std::string& h = header[i];
    const std::size_t p = std::strlen(kStallPrefix), s = std::strlen(kStallSuffix);
    if (h.size() <= p + s || !starts_with(h, kStallPrefix) || h.compare(h.size() - s, s, kStallSuffix) != 0) continue;
    const std::string reason = h.substr(p, h.size() - p - s);
    if (reason == "selected" || reason == "not_selected") continue;  // issuing, and ready to: not stalls
    stalls.push_back({reason, column(h, Quantity::plain)});
  }
  NcuTable table;
  for (std::size_t i = units ? 2 : 1; i < rows.size(); ++i) {
    const auto& row = rows[i];
    if (row.size() != header.size() || !is_kernel_id(row[0])) {
      ++table.lines_left_out;
      continue;
    }
    KernelProfile k;
    k.name = short_kernel_name(name_col >= 0 ? row[name_col] : "");
    k.duration_ns = duration.read(row);
    if (dram_read.present() || dram_write.present())
      k.dram_bytes = sum_known(dram_read.read(row), dram_write.read(row));
    else if (dram_total.present())
      k.dram_bytes = dram_total.read(row);
    else if (dram_rate.present())
      k.dram_bytes = dram_rate.read(row) * k.duration_ns * 1e-9;
    k.achieved_occupancy = achieved.read(row);
    k.theoretical_occupancy = theoretical.read(row);
    k.registers = registers.read(row);
    k.spill_instructions = spills.read(row);
    if (smem_static.present() || smem_dynamic.present())
      k.shared_bytes = sum_known(smem_static.read(row), smem_dynamic.read(row));
    for (const auto& [reason, c] : stalls) {
      const double v = c.read(row);
      if (!std::isnan(v)) k.stalls.push_back({reason, v});
    }
    table.kernels.push_back(std::move(k));
  }
  return table;
}

std::string short_kernel_name(const std::string& demangled) {
  // the name before its parameter list and without template arguments (a '>' with no '<' before
  // it, as in ncu's "unnamed>::", is part of a qualifier); "(anonymous namespace)" is a qualifier,
  // not a parameter list
  std::string text = demangled;
  const std::string anonymous = "(anonymous namespace)";
  for (std::size_t p = text.find(anonymous); p != std::string::npos; p = text.find(anonymous, p))
    text.replace(p, anonymous.size(), "anonymous");
  std::string flat;
  int depth = 0;
  for (char c : text) {
    if (c == '(' && depth == 0) break;
    if (c == '<') {
      ++depth;
    } else if (c == '>' && depth > 0) {
      --depth;
    } else if (depth == 0) {
      flat += c;
    }
  }
  std::size_t from = flat.rfind("::");
  from = from == std::string::npos ? 0 : from + 2;
  const std::size_t space = flat.find_last_of(' ');
  if (space != std::string::npos && space + 1 > from) from = space + 1;  // a return type ("void k")
  std::string out;
  for (char c : flat.substr(from)) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  return out.empty() ? "kernel" : out;
}

std::string ncu_refusal(const std::string& output) {
  if (output.find("ERR_NVGPUCTRPERM") != std::string::npos) return kNoCounterPermission;
  for (const auto& line : lines_of(output)) {
    if (!starts_with(line, "==ERROR==")) continue;
    std::string low = line;
    std::transform(low.begin(), low.end(), low.begin(), [](unsigned char c) { return std::tolower(c); });
    if (low.find("not supported") != std::string::npos)
      return "ncu cannot profile this GPU: " + trim(line.substr(std::strlen("==ERROR==")));
  }
  return "";
}

ProfileSummary summarize_profile(const std::vector<KernelProfile>& kernels) {
  ProfileSummary s;
  s.kernels = static_cast<int>(kernels.size());
  double total_ns = 0, achieved = 0, achieved_w = 0, theoretical = 0, theoretical_w = 0;
  std::map<std::string, std::pair<double, double>> stall;  // reason -> (weighted sum, weight)
  std::vector<std::pair<std::string, double>> by_name;     // kernel -> summed time, in first-seen order
  for (const auto& k : kernels) {
    const double w = std::isnan(k.duration_ns) || k.duration_ns < 0 ? 0.0 : k.duration_ns;
    total_ns += w;
    s.dram_bytes = sum_known(s.dram_bytes, k.dram_bytes);
    s.spill_instructions = sum_known(s.spill_instructions, k.spill_instructions);
    if (!std::isnan(k.registers))
      s.registers = std::isnan(s.registers) ? k.registers : std::max(s.registers, k.registers);
    if (!std::isnan(k.shared_bytes))
      s.shared_bytes = std::isnan(s.shared_bytes) ? k.shared_bytes : std::max(s.shared_bytes, k.shared_bytes);
    if (!std::isnan(k.achieved_occupancy) && w > 0) {
      achieved += k.achieved_occupancy * w;
      achieved_w += w;
    }
    if (!std::isnan(k.theoretical_occupancy) && w > 0) {
      theoretical += k.theoretical_occupancy * w;
      theoretical_w += w;
    }
    for (const auto& [reason, v] : k.stalls)
      if (w > 0) {
        stall[reason].first += v * w;
        stall[reason].second += w;
      }
    auto it = std::find_if(by_name.begin(), by_name.end(), [&](const auto& p) { return p.first == k.name; });
    if (it == by_name.end())
      by_name.push_back({k.name, w});
    else
      it->second += w;
  }
  s.duration_ms = total_ns * 1e-6;
  if (achieved_w > 0) s.achieved_occupancy = achieved / achieved_w;
  if (theoretical_w > 0) s.theoretical_occupancy = theoretical / theoretical_w;
  std::vector<std::pair<std::string, double>> avg;
  for (const auto& [reason, sw] : stall)
    if (sw.second > 0 && sw.first > 0) avg.push_back({reason, sw.first / sw.second});
  std::stable_sort(avg.begin(), avg.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  avg.resize(std::min<std::size_t>(avg.size(), 2));
  s.top_stalls = avg;
  const auto heaviest = std::max_element(by_name.begin(), by_name.end(),
                                         [](const auto& a, const auto& b) { return a.second < b.second; });
  if (heaviest != by_name.end() && total_ns > 0) {
    s.heaviest = heaviest->first;
    s.heaviest_share = 100.0 * heaviest->second / total_ns;
  }
  return s;
}

void set_profile_metrics(ResultRow& r, const ProfileSummary& s, double copy_gbs) {
  r.add_metric("kernels", s.kernels, "").add_metric("duration", s.duration_ms, "ms");
  if (!std::isnan(s.dram_bytes) && s.duration_ms > 0) {
    r.metric = s.dram_bytes / (s.duration_ms * 1e-3) / 1e9;
    r.metric_unit = "GB/s";
    if (copy_gbs > 0) {
      r.pct_of_ceiling = 100.0 * r.metric / copy_gbs;
      r.ceiling = "copy_bandwidth";
    }
  }
  r.add_metric("dram", std::isnan(s.dram_bytes) ? kNoValue : s.dram_bytes / 1e6, "MB")
      .add_metric("achieved_occupancy", s.achieved_occupancy, "%")
      .add_metric("theoretical_occupancy", s.theoretical_occupancy, "%")
      .add_metric("registers", s.registers, "reg/thread")
      .add_metric("spill_instructions", s.spill_instructions, "inst")
      .add_metric("shared_memory", s.shared_bytes, "B");
  for (const auto& [reason, v] : s.top_stalls) r.add_metric("stall." + reason, v, "cycles/issue");
  if (!s.heaviest.empty()) r.add_metric("heaviest." + s.heaviest, s.heaviest_share, "%");
}

void print_profile_table(std::ostream& os, const std::vector<ResultRow>& rows) {
  os << std::left << std::setw(26) << "version" << std::right << std::setw(8) << "kernels" << std::setw(10) << "time ms"
     << std::setw(10) << "DRAM GB/s" << std::setw(7) << "%copy" << std::setw(7) << "occ %" << std::setw(7) << "theo %"
     << std::setw(6) << "regs" << std::setw(8) << "spills" << std::setw(9) << "smem B" << "  " << std::left
     << std::setw(44) << "largest stalls (cycles/issue)" << std::setw(36) << "heaviest kernel"
     << "check\n";
  for (const auto& r : rows) {
    if (r.kind != "profile") continue;
    std::string stalls, heaviest;
    for (const auto& m : r.metrics) {
      if (starts_with(m.name, "stall."))
        stalls += (stalls.empty() ? "" : ", ") + m.name.substr(6) + " " + format_fixed(m.value, 2);
      if (starts_with(m.name, "heaviest.")) heaviest = m.name.substr(9) + " " + format_fixed(m.value, 0) + "%";
    }
    if (!r.verdict.ok()) {  // nothing measured: the verdict says why
      os << std::left << std::setw(26) << r.version << r.verdict << "\n";
      continue;
    }
    auto cell = [&](const char* name, int prec) { return format_fixed(r.metric_named(name), prec); };
    os << std::left << std::setw(26) << r.version << std::right << std::setw(8) << cell("kernels", 0) << std::setw(10)
       << cell("duration", 4) << std::setw(10) << format_fixed(r.metric, 1) << std::setw(7)
       << format_fixed(r.pct_of_ceiling, 1) << std::setw(7) << cell("achieved_occupancy", 1) << std::setw(7)
       << cell("theoretical_occupancy", 1) << std::setw(6) << cell("registers", 0) << std::setw(8)
       << cell("spill_instructions", 0) << std::setw(9) << cell("shared_memory", 0) << "  " << std::left
       << std::setw(44) << (stalls.empty() ? "-" : stalls) << std::setw(36) << (heaviest.empty() ? "-" : heaviest)
       << " " << r.verdict << "\n";
  }
}

std::vector<std::string> ncu_command(const ProfileRun& run, const std::string& version, const std::string& report,
                                     const std::string& child_csv, const std::string& graphs) {
  std::vector<std::string> cmd = {run.ncu,
                                  "--nvtx",
                                  "--nvtx-include",
                                  version + "/",
                                  "--graph-profiling",
                                  graphs,
                                  "--launch-count",
                                  std::to_string(kProfileLaunches),
                                  "--clock-control",
                                  "none",
                                  "--section",
                                  "WarpStateStats",
                                  "--metrics",
                                  "gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,"
                                  "sm__warps_active.avg.pct_of_peak_sustained_active,"
                                  "sm__maximum_warps_per_active_cycle_pct,launch__registers_per_thread,"
                                  "launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic,"
                                  "sass__inst_executed_register_spilling",
                                  "--export",
                                  report,
                                  "--force-overwrite",
                                  run.program};
  cmd.insert(cmd.end(), run.args.begin(), run.args.end());
  for (const std::string& a : {std::string("--version"), version, std::string("--csv"), child_csv}) cmd.push_back(a);
  return cmd;
}

namespace {
ProfileOutcome profile_version_as(const ProfileRun& run, const std::string& version, const std::string& graphs) {
  ProfileOutcome out;
  std::filesystem::create_directories(run.work_dir);
  const std::string report = run.work_dir + "/report", report_file = report + ".ncu-rep";
  const std::string child_csv = run.work_dir + "/run.csv", log = run.work_dir + "/ncu.log";
  const std::string raw = run.work_dir + "/raw.csv", import_log = run.work_dir + "/import.log";
  for (const auto& f : {report_file, child_csv, child_csv + ".partial", log, raw, import_log}) {
    std::error_code ec;  // a file that is not there is what is wanted
    std::filesystem::remove(f, ec);
  }
  const auto env = environment_with("COURSE_CEILINGS", run.ceilings);
  const ProcessEnd end = run_process(ncu_command(run, version, report, child_csv, graphs), env, log, "", run.timeout_s);
  const std::string said = read_text(log);
  const std::string no_kernel = "ncu profiled no kernel inside its NVTX range '" + version +
                                "' (its profile case runs none of its kernels there)";
  auto fail = [&](const std::string& why) {
    out.verdict = Verdict::fail(why);
    return out;
  };
  if (!end.started) return fail("cannot start " + run.ncu);
  if (const std::string refused = ncu_refusal(said); !refused.empty()) {
    out.verdict = Verdict::skip(refused);
    out.no_permission = refused == kNoCounterPermission;
    return out;
  }
  if (end.timed_out)
    return fail("the profiled run did not finish in " + format_fixed(run.timeout_s, 0) +
                " s (killed): " + log_tail(said));
  const std::optional<Verdict> child = version_verdict(child_csv, version);
  if (!child)  // exit status 2: the driver refused the profile case's arguments
    return fail("the profiled run wrote no row of it (" + exit_text(end) + "): " + log_tail(said, end.status == 2));
  if (child->failed()) return fail("the profiled run failed: " + child->detail);
  if (!child->ok()) {
    out.verdict = *child;  // skipped (this GPU cannot run it) or a starter body: said as the run said it
    return out;
  }
  if (!std::filesystem::exists(report_file)) {
    if (said.find("No kernels were profiled") != std::string::npos) {
      out.verdict = Verdict::skip(no_kernel);
      out.no_kernel = true;
      return out;
    }
    return fail("ncu wrote no report (" + exit_text(end) + "): " + log_tail(said));
  }
  const ProcessEnd imported =
      run_process({run.ncu, "--import", report_file, "--csv", "--page", "raw", "--print-units", "base",
                   "--print-kernel-base", "function"},  // the kernel's own name, no templates or parameters
                  env, raw, import_log, kProfileImportTimeoutS);
  if (!imported.started || imported.timed_out || imported.signal || imported.status != 0)
    return fail("ncu --import of its report failed (" + (imported.timed_out ? "timed out" : exit_text(imported)) +
                "): " + log_tail(read_text(import_log)));
  NcuTable table;
  try {
    table = parse_ncu_raw_csv(read_text(raw));
  } catch (const std::runtime_error& e) {
    return fail(std::string("ncu's CSV: ") + e.what());
  }
  if (table.kernels.empty()) {
    out.verdict = Verdict::skip(no_kernel);
    out.no_kernel = true;
    return out;
  }
  out.summary = summarize_profile(table.kernels);
  out.summary.whole_graphs = graphs == "graph";
  out.verdict = Verdict::pass();
  return out;
}
}  // namespace

ProfileOutcome profile_version(const ProfileRun& run, const std::string& version) {
  ProfileOutcome out = profile_version_as(run, version, "node");
  // Kernels that run only inside a conditional WHILE node (v5-v7 of ndt_graph) are not profiled
  // node by node (measured on an H200, ncu 2025.3: none of them was); profiled once more as whole
  // graph launches they are, each launch one result.
  if (out.no_kernel) {
    ProfileOutcome whole = profile_version_as(run, version, "graph");
    if (whole.verdict.ok() || !whole.no_kernel) return whole;
  }
  return out;
}

std::string find_ncu() {
  const char* given = std::getenv("COURSE_NCU");
  if (given && *given) return is_executable_file(given) ? given : "";
  const char* path = std::getenv("PATH");
  for (const auto& dir : split(path ? path : "", ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/ncu";
    if (is_executable_file(candidate)) return candidate;
  }
  return "";
}

int run_profile(const CliOptions& o, const std::string& subproject, const std::vector<ProfileTarget>& targets) {
  const Environment env = detect_environment();
  RowList rows;
  rows.push_back(meta_row(subproject, env));
  rows.back().params = "seed=" + std::to_string(o.seed) + " launches=" + std::to_string(kProfileLaunches);
  std::cout << subproject << " --profile: each GPU version once more under Nsight Compute (ncu), on the case below,\n"
            << "its first " << kProfileLaunches
            << " kernels inside its own NVTX range, at the card's clocks, caches flushed before each kernel\n";
  std::string ncu, no_ncu;
  if (env.gpu) {
    std::cout << "device: " << describe(env.device) << "\n";
    ncu = find_ncu();
    const char* given = std::getenv("COURSE_NCU");
    if (ncu.empty())
      no_ncu = given && *given ? "$COURSE_NCU ('" + std::string(given) + "') is not an executable file" : kNcuNotFound;
    std::cout << "ncu: " << (ncu.empty() ? no_ncu : ncu) << "\n";
  } else {
    std::cout << "device: " << gpu_unavailable_reason() << ": every GPU version is listed as skipped\n";
  }
  std::ostringstream ceilings;
  ceilings << std::setprecision(6) << "copy_bandwidth=" << env.ceilings.copy_gbs
           << ";fp32_fma_peak=" << env.ceilings.fma_gflops << ";launch_latency=" << env.ceilings.launch_us;
  int gpu_targets = 0;
  std::vector<std::pair<std::string, std::string>> cases;  // a case's arguments -> the versions profiled on it
  for (const auto& t : targets) {
    if (!t.entry.needs_gpu) continue;
    ++gpu_targets;
    const std::string args = join(t.args, " ");
    auto it = std::find_if(cases.begin(), cases.end(), [&](const auto& c) { return c.first == args; });
    if (it == cases.end())
      cases.push_back({args, t.entry.name});
    else
      it->second += ", " + t.entry.name;
  }
  for (const auto& [args, names] : cases)
    std::cout << "case: " << subproject << " " << args << " --version NAME"
              << (cases.size() > 1 ? " (" + names + ")" : "") << "\n";
  if (!cases.empty()) std::cout << "\n";
  std::optional<TempDir> work;
  std::string program;
  if (env.gpu && !ncu.empty() && gpu_targets > 0) {
    work.emplace();
    program = self_executable();
  }
  Progress progress(gpu_targets, subproject + " profile");
  std::string refused;  // ncu cannot read the counters: every later version would say the same
  for (const auto& t : targets) {
    const std::string params =
        t.entry.needs_gpu ? "launches=" + std::to_string(kProfileLaunches) + " args=" + join(t.args, " ") : "";
    ResultRow r = make_row(subproject, t.entry.name, t.entry.idea, 0, params, env.device_label, role_name(t.entry.role),
                           "profile");
    if (!t.entry.needs_gpu) {
      r.verdict = Verdict::skip("runs on the CPU: ncu profiles GPU kernels");
    } else if (!env.gpu) {
      r.verdict = no_gpu_verdict();
    } else if (const std::string why = unmet(t.entry.needs); !why.empty()) {
      r.verdict = Verdict::skip(why);
    } else if (ncu.empty()) {
      r.verdict = Verdict::skip(no_ncu);
    } else if (!refused.empty()) {
      r.verdict = Verdict::skip(refused);
    } else {
      progress.step(t.entry.name);
      ProfileRun run{ncu, program, t.args, work->path() + "/" + t.entry.name, ceilings.str()};
      run.args.insert(run.args.end(), {"--seed", std::to_string(o.seed)});
      const ProfileOutcome got = profile_version(run, t.entry.name);
      r.verdict = got.verdict;
      if (got.no_permission) refused = got.verdict.detail;
      if (got.verdict.ok()) {
        set_profile_metrics(r, got.summary, env.ceilings.copy_gbs);
        // each result a whole graph launch: its "kernel" is the graph, its figures the graph's
        if (got.summary.whole_graphs) r.params += " graphs=whole";
      }
    }
    rows.push_back(r);
  }
  print_profile_table(std::cout, rows.all());
  return finish_run(std::cout, subproject + " profile", rows, o.csv);
}

}  // namespace common
