#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <sstream>

#include "common/output_file.hpp"
#include "nbody/io.hpp"

namespace nbody {
namespace {

[[noreturn]] void fail(const std::string& name, std::size_t line, const std::string& why) {
  throw InputError(name + (line ? ":" + std::to_string(line) : "") + ": " + why);
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  std::size_t b = 0;
  while (b < s.size() && (s[b] == ' ' || s[b] == '\t')) ++b;
  return s.substr(b);
}

}  // namespace

Bodies parse_snapshot_csv(const std::string& text, const std::string& name) {
  if (text.empty()) fail(name, 0, "empty file");
  Bodies b;
  std::size_t pos = 0, line_no = 0;
  int columns = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    if (line_no == 1) {
      std::string h;
      for (char c : line)
        if (c != ' ' && c != '"') h += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (h == "x,y,z,vx,vy,vz,m")
        columns = 7;
      else if (h == "x,y,z,vx,vy,vz,m,id")
        columns = 8;
      else
        fail(name, 1, "missing header: expected 'x,y,z,vx,vy,vz,m' or 'x,y,z,vx,vy,vz,m,id', got '" + line + "'");
      continue;
    }
    if (line.empty()) {
      if (pos >= text.size()) break;  // trailing newline
      fail(name, line_no, "empty line");
    }
    float v[7];
    std::int64_t id = static_cast<std::int64_t>(b.size());
    const char* p = line.data();
    const char* e = line.data() + line.size();
    for (int c = 0; c < columns; ++c) {
      while (p < e && *p == ' ') ++p;
      const char* q = std::find(p, e, ',');
      if (c < columns - 1 && q == e)
        fail(name, line_no, "short row: " + std::to_string(c + 1) + " of " + std::to_string(columns) + " columns");
      if (c == columns - 1 && q != e) fail(name, line_no, "more than " + std::to_string(columns) + " columns");
      const char* field_end = q;
      while (field_end > p && field_end[-1] == ' ') --field_end;
      std::from_chars_result r;
      if (c < 7) {
        r = std::from_chars(p, field_end, v[c]);
        if (r.ec == std::errc() && r.ptr == field_end && !std::isfinite(v[c]))
          fail(name, line_no, "column " + std::to_string(c + 1) + " is not finite");
      } else {  // the id: a whole non-negative integer (no "1.7", "nan" or "1e3" cast silently)
        r = std::from_chars(p, field_end, id);
        if (r.ec != std::errc() || r.ptr != field_end || p == field_end || id < 0)
          fail(name, line_no, "id is not a non-negative integer: '" + std::string(p, field_end) + "'");
      }
      if (r.ec != std::errc() || r.ptr != field_end || p == field_end)
        fail(name, line_no,
             "column " + std::to_string(c + 1) + " is not a number: '" + std::string(p, field_end) + "'");
      p = q + 1;
    }
    if (v[6] < 0) fail(name, line_no, "negative mass");
    b.x.push_back(v[0]);
    b.y.push_back(v[1]);
    b.z.push_back(v[2]);
    b.vx.push_back(v[3]);
    b.vy.push_back(v[4]);
    b.vz.push_back(v[5]);
    b.m.push_back(v[6]);
    b.id.push_back(id);
  }
  if (b.size() == 0) fail(name, 0, "no bodies after the header");
  return b;
}

Bodies read_snapshot_csv(const std::string& path) {
  std::ifstream is(path, std::ios::binary);
  if (!is) throw InputError(path + ": cannot open");
  std::ostringstream ss;
  ss << is.rdbuf();
  return parse_snapshot_csv(ss.str(), path);
}

void write_snapshot_csv(const std::string& path, const Bodies& b) {
  std::string text = "x,y,z,vx,vy,vz,m,id\n";
  char line[256];
  for (std::size_t i = 0; i < b.size(); ++i) {
    const int len = std::snprintf(line, sizeof line, "%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%lld\n", b.x[i], b.y[i],
                                  b.z[i], b.vx[i], b.vy[i], b.vz[i], b.m[i], static_cast<long long>(b.id[i]));
    text.append(line, static_cast<std::size_t>(len));
  }
  common::write_file_atomic(path, text);  // a unique temporary in the directory, fsync, rename
}

std::vector<std::string> list_snapshots(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) throw InputError(dir + ": cannot open directory");
  std::vector<std::string> files;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".csv") == 0) files.push_back(dir + "/" + n);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError(dir + ": no *.csv snapshots");
  return files;
}

}  // namespace nbody
