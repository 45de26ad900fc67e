#include "common/cli.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace common {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

namespace {

constexpr std::int64_t kSizeMax = std::int64_t{1} << 62;

std::int64_t parse_plain(const std::string& t, const std::string& whole) {
  if (t.empty()) throw UsageError("bad size '" + whole + "': empty number");
  std::int64_t v = 0;
  for (char c : t) {
    if (!std::isdigit(static_cast<unsigned char>(c)))
      throw UsageError("bad size '" + whole + "': '" + t + "' is not a non-negative integer");
    if (v > (kSizeMax - (c - '0')) / 10) throw UsageError("bad size '" + whole + "': larger than 2^62");
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

std::int64_t parse_size(const std::string& text) {
  std::string t;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) t += c;
  std::size_t pos = 0;
  std::int64_t base;
  if (t.find('^') != std::string::npos || t.find("<<") != std::string::npos) {
    const bool caret = t.find('^') != std::string::npos;
    const std::size_t op = caret ? t.find('^') : t.find("<<");
    const std::int64_t lhs = parse_plain(t.substr(0, op), text);
    std::size_t rest = op + (caret ? 1 : 2);
    std::size_t end = t.find_first_of("+-", rest);
    const std::int64_t exp = parse_plain(t.substr(rest, end - rest), text);
    if (exp > 40) throw UsageError("bad size '" + text + "': exponent above 40");
    if (caret) {
      if (lhs != 2) throw UsageError("bad size '" + text + "': only powers of two (2^k)");
      base = std::int64_t{1} << exp;
    } else {
      if (lhs > (kSizeMax >> exp)) throw UsageError("bad size '" + text + "': larger than 2^62");
      base = lhs << exp;
    }
    pos = end;
  } else {
    pos = t.find_first_of("+-");
    base = parse_plain(t.substr(0, pos), text);
  }
  if (pos != std::string::npos) {
    const std::int64_t off = parse_plain(t.substr(pos + 1), text);
    if (t[pos] == '+' && base > kSizeMax - off) throw UsageError("bad size '" + text + "': larger than 2^62");
    base = t[pos] == '+' ? base + off : base - off;
    if (base < 0) throw UsageError("bad size '" + text + "': negative");
  }
  return base;
}

namespace {

std::string range_text(double lo, double hi) {
  std::ostringstream os;
  os.precision(17);
  os << "[" << lo << ", " << hi << "]";
  return os.str();
}

}  // namespace

std::int64_t parse_int(const std::string& text, const std::string& flag, std::int64_t lo, std::int64_t hi) {
  std::int64_t v = 0;
  try {
    v = parse_size(text);
  } catch (const UsageError& e) {
    throw UsageError("--" + flag + ": " + e.what() + " (allowed: " + std::to_string(lo) + " to " + std::to_string(hi) +
                     ")");
  }
  if (v < lo || v > hi)
    throw UsageError("--" + flag + ": '" + text + "' is out of range (allowed: " + std::to_string(lo) + " to " +
                     std::to_string(hi) + ")");
  return v;
}

double parse_number(const std::string& text, const std::string& flag, double lo, double hi) {
  const std::string where = "--" + flag + ": '" + text + "'";
  if (text.empty()) throw UsageError("--" + flag + " needs a number");
  for (char c : text)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'))
      throw UsageError(where + " is not a number (digits, sign, '.', exponent only)");
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) throw UsageError(where + " is not a number");
  if (errno == ERANGE && std::isinf(v)) throw UsageError(where + " overflows a double");
  if (!std::isfinite(v)) throw UsageError(where + " is not finite");
  if (!(v >= lo && v <= hi)) throw UsageError(where + " is out of range " + range_text(lo, hi));
  return v;
}

bool CliOptions::was_given(const std::string& name) const {
  if (name == "n" || name == "sizes") return !sizes.empty();
  if (name == "sweep") return sweep;
  if (name == "cold") return cold;
  if (name == "fresh-inputs") return fresh_inputs;
  if (name == "input") return !input.empty();
  if (name == "evidence-fd") return evidence_fd >= 0;
  if (name == "version") return !versions.empty();
  if (name == "reps") return reps > 0;
  if (name == "warmup") return warmup >= 0;
  if (name == "profile") return profile;
  return std::find(given.begin(), given.end(), name) != given.end();
}

bool CliOptions::flag(const std::string& name) const {
  auto it = extra.find(name);
  return it != extra.end() && it->second == "1";
}

std::int64_t CliOptions::extra_int(const std::string& name, std::int64_t lo, std::int64_t hi) const {
  auto it = extra.find(name);
  if (it == extra.end() || it->second.empty()) throw UsageError("--" + name + " needs a value");
  return parse_int(it->second, name, lo, hi);
}

double CliOptions::extra_double(const std::string& name, double lo, double hi) const {
  auto it = extra.find(name);
  if (it == extra.end() || it->second.empty()) throw UsageError("--" + name + " needs a value");
  return parse_number(it->second, name, lo, hi);
}

CliOptions parse_cli(int argc, const char* const* argv, const std::vector<ExtraFlag>& extras) {
  CliOptions o;
  for (const auto& e : extras) o.extra[e.name] = e.takes_value ? e.default_value : "0";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_inline = false;
    if (arg.rfind("--", 0) != 0) throw UsageError("unexpected argument '" + arg + "'");
    arg = arg.substr(2);
    if (auto eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_inline = true;
    }
    auto need_value = [&]() -> std::string {
      if (has_inline) return value;
      if (i + 1 >= argc) throw UsageError("--" + arg + " needs a value");
      return argv[++i];
    };
    auto no_value = [&]() {
      if (has_inline) throw UsageError("--" + arg + " takes no value");
    };
    if (arg == "help") {
      no_value();
      o.help = true;
    } else if (arg == "list") {
      no_value();
      o.list = true;
    } else if (arg == "sweep") {
      no_value();
      o.sweep = true;
    } else if (arg == "quick") {
      no_value();
      o.quick = true;
    } else if (arg == "cold") {
      no_value();
      o.cold = true;
    } else if (arg == "fresh-inputs") {
      no_value();
      o.fresh_inputs = true;
    } else if (arg == "profile") {
      no_value();
      o.profile = true;
    } else if (arg == "version") {
      for (const auto& v : split(need_value(), ','))
        if (!v.empty()) o.versions.push_back(v);
      if (o.versions.empty()) throw UsageError("--version needs at least one name");
    } else if (arg == "n" || arg == "sizes") {
      for (const auto& s : split(need_value(), ',')) o.sizes.push_back(parse_size(s));
    } else if (arg == "reps") {
      const std::int64_t r = parse_size(need_value());
      if (r < 1 || r > 100000) throw UsageError("--reps must be between 1 and 100000");
      o.reps = static_cast<int>(r);
    } else if (arg == "warmup") {
      o.warmup = static_cast<int>(parse_int(need_value(), "warmup", 0, 1000));
    } else if (arg == "csv") {
      o.csv = need_value();
      if (o.csv.empty()) throw UsageError("--csv needs a path");
    } else if (arg == "evidence-fd") {
      o.evidence_fd = static_cast<int>(parse_int(need_value(), "evidence-fd", 0, 1 << 20));
    } else if (arg == "seed") {
      o.seed = static_cast<std::uint64_t>(parse_size(need_value()));
    } else if (arg == "input") {
      o.input = need_value();
      if (o.input.empty()) throw UsageError("--input needs a path");
    } else {
      bool known = false;
      for (const auto& e : extras) {
        if (e.name != arg) continue;
        known = true;
        if (!o.was_given(arg)) o.given.push_back(arg);
        if (e.takes_value)
          o.extra[arg] = need_value();
        else {
          no_value();
          o.extra[arg] = "1";
        }
      }
      if (!known) throw UsageError("unknown flag --" + arg);
    }
  }
  return o;
}

std::string usage(const std::string& program, const std::string& summary, const std::vector<ExtraFlag>& extras,
                  const std::vector<std::string>& ignored) {
  std::ostringstream os;
  os << "usage: " << program << " [flags]\n" << summary << "\n\n";
  const std::pair<const char*, const char*> common_flags[] = {
      {"list", "  --list               list the versions and their ideas, then exit\n"},
      {"version", "  --version A,B        run only these versions (names or ids from --list)\n"},
      {"n", "  --n N[,N...]         sizes: 1000, 2^20, 2^20-3, 1<<20\n"},
      {"sweep", "  --sweep              sweep the sizes of the full benchmark\n"},
      {"reps", "  --reps R             exactly R timed samples (default: until the median is stable)\n"},
      {"warmup", "  --warmup W           W untimed runs before a row's samples (default: the driver's own)\n"},
      {"csv", "  --csv PATH           write the result rows to PATH (atomically)\n"},
      {"seed", "  --seed S             seed of the generated inputs (printed in the header)\n"},
      {"quick", "  --quick              small sizes, few samples (CI smoke run)\n"},
      {"cold", "  --cold               flush L2 before every timed sample\n"},
      {"fresh-inputs",
       "  --fresh-inputs       every run timed on a new input (made untimed) and its output checked:\n"
       "                       a version cannot replay a remembered result (the grader passes it)\n"},
      {"evidence-fd", "  --evidence-fd N      write a record of every checked output to descriptor N (the grader's)\n"},
      {"profile",
       "  --profile            instead of the run: each GPU version under Nsight Compute (ncu) on this driver's\n"
       "                       fixed small case, one profile row per version (time, DRAM, occupancy, stalls)\n"},
      {"input", "  --input FILE         read the input from FILE instead of generating it\n"}};
  for (const auto& [name, line] : common_flags)
    if (std::find(ignored.begin(), ignored.end(), name) == ignored.end()) os << line;
  for (const auto& e : extras) {
    std::string lhs = "--" + e.name + (e.takes_value ? " V" : "");
    os << "  " << lhs << std::string(lhs.size() < 21 ? 21 - lhs.size() : 1, ' ') << e.help;
    if (e.takes_value && !e.default_value.empty()) os << " (default " << e.default_value << ")";
    os << "\n";
  }
  return os.str();
}

void reject_ignored_flags(const CliOptions& o, const std::string& program, const std::vector<std::string>& ignores) {
  for (const auto& f : ignores)
    if (o.was_given(f)) throw UsageError("--" + f + " is not used by " + program + " (see --help)");
}

void reject_flags_beside_profile(const CliOptions& o) {
  if (!o.profile) return;
  std::vector<std::string> beside;
  if (o.list) beside.push_back("list");
  if (o.quick) beside.push_back("quick");
  for (const char* f : {"n", "sweep", "reps", "warmup", "cold", "fresh-inputs", "evidence-fd", "input"})
    if (o.was_given(f)) beside.push_back(f);
  for (const auto& f : o.given) beside.push_back(f);
  if (!beside.empty())
    throw UsageError("--profile runs every version on this driver's own fixed case, so --" + beside.front() +
                     " does not apply to it (--profile takes --version, --csv and --seed)");
}

}  // namespace common
