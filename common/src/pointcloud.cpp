#include "common/pointcloud.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace common {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) { throw PointCloudError(path + ": " + why); }

std::vector<unsigned char> slurp(const std::string& path) {
  std::ifstream is(path, std::ios::binary | std::ios::ate);
  if (!is) fail(path, "cannot open");
  const std::streamoff size = is.tellg();
  std::vector<unsigned char> data(static_cast<std::size_t>(size));
  is.seekg(0);
  if (size > 0 && !is.read(reinterpret_cast<char*>(data.data()), size)) fail(path, "short read");
  return data;
}

void keep_point(PointCloud& pc, float x, float y, float z, const float* intensity, std::uint32_t index) {
  if (!std::isfinite(x) || !std::isfinite(y) || !std::isfinite(z)) {
    ++pc.dropped_nonfinite;
    return;
  }
  if (pc.height > 1 && x == 0.f && y == 0.f && z == 0.f) {
    ++pc.dropped_no_return;
    return;
  }
  pc.x.push_back(x);
  pc.y.push_back(y);
  pc.z.push_back(z);
  if (intensity) pc.intensity.push_back(*intensity);
  pc.source_index.push_back(index);
}

struct PcdField {
  std::string name;
  int size = 0, count = 1;
  char type = 'F';
  std::size_t offset = 0;  // within a record (binary) or the start of its column (compressed)
};

// a * b, or the error naming the file and what the product is
std::size_t checked_mul(std::size_t a, std::size_t b, const std::string& path, const std::string& what) {
  if (a != 0 && b > static_cast<std::size_t>(-1) / a)
    fail(path, what + " overflows (" + std::to_string(a) + " x " + std::to_string(b) + ")");
  return a * b;
}

// A header count (WIDTH, HEIGHT, POINTS): a non-negative integer below 2^40, the whole token.
std::size_t header_count(std::istringstream& ls, const std::string& path, const std::string& key) {
  std::string tok, extra;
  if (!(ls >> tok) || (ls >> extra)) fail(path, key + " line must hold exactly one number");
  if (tok.empty() || tok.size() > 13 || tok.find_first_not_of("0123456789") != std::string::npos)
    fail(path, key + " '" + tok + "' is not a non-negative integer below 2^40");
  const unsigned long long v = std::stoull(tok);
  if (v >= (1ull << 40)) fail(path, key + " " + tok + " is 2^40 or more");
  return static_cast<std::size_t>(v);
}

bool supported_scalar(const PcdField& f) {
  switch (f.type) {
    case 'F': return f.size == 4 || f.size == 8;
    case 'U':
    case 'I': return f.size == 1 || f.size == 2 || f.size == 4 || f.size == 8;
  }
  return false;
}

// Only blanks (what some writers append) may follow the data.
void require_blank_tail(const std::vector<unsigned char>& data, std::size_t from, const std::string& path) {
  for (std::size_t k = from; k < data.size(); ++k)
    if (!(data[k] == '\n' || data[k] == '\r' || data[k] == ' ' || data[k] == '\t' || data[k] == '\0'))
      fail(path, std::to_string(data.size() - from) + " bytes after the last point (trailing data)");
}

double read_scalar(const unsigned char* p, const PcdField& f) {
  switch (f.type) {
    case 'F':
      if (f.size == 4) {
        float v;
        std::memcpy(&v, p, 4);
        return v;
      }
      if (f.size == 8) {
        double v;
        std::memcpy(&v, p, 8);
        return v;
      }
      break;
    case 'U':
      if (f.size == 1) return *p;
      if (f.size == 2) {
        std::uint16_t v;
        std::memcpy(&v, p, 2);
        return v;
      }
      if (f.size == 4) {
        std::uint32_t v;
        std::memcpy(&v, p, 4);
        return v;
      }
      if (f.size == 8) {
        std::uint64_t v;
        std::memcpy(&v, p, 8);
        return static_cast<double>(v);
      }
      break;
    case 'I':
      if (f.size == 1) return static_cast<std::int8_t>(*p);
      if (f.size == 2) {
        std::int16_t v;
        std::memcpy(&v, p, 2);
        return v;
      }
      if (f.size == 4) {
        std::int32_t v;
        std::memcpy(&v, p, 4);
        return v;
      }
      if (f.size == 8) {
        std::int64_t v;
        std::memcpy(&v, p, 8);
        return static_cast<double>(v);
      }
      break;
  }
  return NAN;  // not reached: header_fields() rejects other types
}

}  // namespace

std::string data_dir() {
  const char* d = std::getenv("COURSE_DATA_DIR");
  return d && *d ? d : "data";
}

bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

PointCloud read_kitti_bin(const std::string& path) {
  const auto data = slurp(path);
  if (data.empty()) fail(path, "empty file");
  if (data.size() % 16 != 0)
    fail(path,
         std::to_string(data.size()) + " bytes is not a whole number of 16-byte points (x y z remission, float32)");
  PointCloud pc;
  const std::size_t n = data.size() / 16;
  pc.width = n;
  pc.x.reserve(n);
  pc.y.reserve(n);
  pc.z.reserve(n);
  pc.intensity.reserve(n);
  pc.source_index.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    float v[4];
    std::memcpy(v, data.data() + 16 * i, 16);
    keep_point(pc, v[0], v[1], v[2], &v[3], static_cast<std::uint32_t>(i));
  }
  return pc;
}

std::vector<std::uint32_t> read_semantickitti_labels(const std::string& path, std::size_t expected_points) {
  const auto data = slurp(path);
  if (data.size() % 4 != 0) fail(path, std::to_string(data.size()) + " bytes is not a whole number of uint32 labels");
  if (data.size() / 4 != expected_points)
    fail(path, std::to_string(data.size() / 4) + " labels for " + std::to_string(expected_points) + " points");
  std::vector<std::uint32_t> labels(expected_points);
  if (expected_points) std::memcpy(labels.data(), data.data(), data.size());
  return labels;
}

std::vector<unsigned char> lzf_decompress(const unsigned char* in, std::size_t in_len, std::size_t out_len,
                                          const std::string& name) {
  std::vector<unsigned char> out(out_len);
  std::size_t ip = 0, op = 0;
  while (ip < in_len) {
    const unsigned ctrl = in[ip++];
    if (ctrl < 32) {  // a literal run of ctrl + 1 bytes
      const std::size_t len = ctrl + 1;
      if (ip + len > in_len) fail(name, "LZF literal run past the end of the compressed data");
      if (op + len > out_len) fail(name, "LZF data decompresses past the declared size");
      std::memcpy(out.data() + op, in + ip, len);
      ip += len;
      op += len;
    } else {  // a back reference: length (ctrl >> 5) + 2, longer lengths in an extra byte
      std::size_t len = ctrl >> 5;
      if (len == 7) {
        if (ip >= in_len) fail(name, "truncated LZF back reference");
        len += in[ip++];
      }
      len += 2;
      if (ip >= in_len) fail(name, "truncated LZF back reference");
      const std::size_t back = ((ctrl & 0x1f) << 8) + in[ip++] + 1;
      if (back > op) fail(name, "LZF back reference before the start of the data");
      if (op + len > out_len) fail(name, "LZF data decompresses past the declared size");
      for (std::size_t k = 0; k < len; ++k, ++op) out[op] = out[op - back];  // may overlap
    }
  }
  if (op != out_len)
    fail(name, "LZF data decompressed to " + std::to_string(op) + " bytes, header says " + std::to_string(out_len));
  return out;
}

PointCloud read_pcd(const std::string& path) {
  const auto data = slurp(path);
  if (data.empty()) fail(path, "empty file");
  std::vector<PcdField> fields;
  std::size_t width = 0, height = 1, points = 0, pos = 0;
  bool have_points = false;
  std::string format;
  std::vector<int> sizes, counts;
  std::vector<char> types;
  while (format.empty()) {
    if (pos >= data.size()) fail(path, "header ends before its DATA line");
    std::size_t end = pos;
    while (end < data.size() && data[end] != '\n') ++end;
    std::string line(reinterpret_cast<const char*>(data.data()) + pos, end - pos);
    pos = end < data.size() ? end + 1 : data.size();  // the last line may end the file
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    if (key == "VERSION") continue;
    if (key == "FIELDS") {
      if (!fields.empty()) fail(path, "two FIELDS lines");
      std::string f;
      while (ls >> f) {
        for (const auto& g : fields)
          if (g.name == f) fail(path, "field '" + f + "' is listed twice in FIELDS");
        fields.push_back({f});
      }
    } else if (key == "SIZE") {
      int v;
      while (ls >> v) sizes.push_back(v);
    } else if (key == "TYPE") {
      std::string t;
      while (ls >> t) types.push_back(t.empty() ? '?' : t[0]);
    } else if (key == "COUNT") {
      int v;
      while (ls >> v) counts.push_back(v);
    } else if (key == "WIDTH") {
      width = header_count(ls, path, "WIDTH");
    } else if (key == "HEIGHT") {
      height = header_count(ls, path, "HEIGHT");
    } else if (key == "POINTS") {
      points = header_count(ls, path, "POINTS");
      have_points = true;
    } else if (key == "VIEWPOINT") {
      continue;
    } else if (key == "DATA") {
      if (!(ls >> format)) fail(path, "DATA line names no format");
    } else {
      fail(path, "unknown header line '" + line + "' (not a PCD v0.7 file?)");
    }
  }
  if (fields.empty()) fail(path, "header has no FIELDS");
  if (sizes.size() != fields.size() || types.size() != fields.size())
    fail(path, "FIELDS, SIZE and TYPE list different numbers of entries");
  if (!counts.empty() && counts.size() != fields.size()) fail(path, "COUNT lists a different number of entries");
  const std::size_t wh = checked_mul(width, height, path, "WIDTH x HEIGHT");
  if (!have_points) points = wh;
  if (points != wh) fail(path, "POINTS " + std::to_string(points) + " is not WIDTH x HEIGHT = " + std::to_string(wh));
  std::size_t record = 0;
  int ix = -1, iy = -1, iz = -1, ii = -1;
  for (std::size_t f = 0; f < fields.size(); ++f) {
    fields[f].size = sizes[f];
    fields[f].type = types[f];
    fields[f].count = counts.empty() ? 1 : counts[f];
    if (fields[f].size <= 0 || fields[f].count <= 0) fail(path, "field '" + fields[f].name + "' has no size");
    if (!supported_scalar(fields[f]))
      fail(path, "field '" + fields[f].name + "' has TYPE " + std::string(1, fields[f].type) + " SIZE " +
                     std::to_string(fields[f].size) + " (supported: F 4/8, U and I 1/2/4/8)");
    if (fields[f].count > (1 << 20)) fail(path, "field '" + fields[f].name + "' has COUNT above 2^20");
    fields[f].offset = record;
    record += static_cast<std::size_t>(fields[f].size) * fields[f].count;
    const std::string& n = fields[f].name;
    if (n == "x") ix = static_cast<int>(f);
    if (n == "y") iy = static_cast<int>(f);
    if (n == "z") iz = static_cast<int>(f);
    if (n == "intensity") ii = static_cast<int>(f);
  }
  if (ix < 0 || iy < 0 || iz < 0) fail(path, "no x, y, z fields");
  for (int f : {ix, iy, iz, ii})
    if (f >= 0 && fields[f].count != 1)
      fail(path, "field '" + fields[f].name + "' has COUNT " + std::to_string(fields[f].count) + " (1 expected)");
  const std::size_t left = data.size() - pos;
  // what the data can hold, checked before anything is reserved for the points
  if (format == "ascii" && points > left)
    fail(path,
         "POINTS " + std::to_string(points) + " cannot fit in the " + std::to_string(left) + " bytes of ascii data");
  if (format == "binary" && checked_mul(points, record, path, "POINTS x record size") > left)
    fail(path, "binary data holds " + std::to_string(left / record) + " of " + std::to_string(points) +
                   " points (truncated)");
  for (int f : {ix, iy, iz})
    if (fields[f].type != 'F' || (fields[f].size != 4 && fields[f].size != 8))
      fail(path, "coordinate field '" + fields[f].name + "' is not float32/float64");
  PointCloud pc;
  pc.width = width;
  pc.height = height;
  if (format == "ascii" || format == "binary") {
    pc.x.reserve(points);
    pc.y.reserve(points);
    pc.z.reserve(points);
    pc.source_index.reserve(points);
  }
  auto emit = [&](std::size_t i, double x, double y, double z, double in) {
    const float fi = static_cast<float>(in);
    keep_point(pc, static_cast<float>(x), static_cast<float>(y), static_cast<float>(z), ii >= 0 ? &fi : nullptr,
               static_cast<std::uint32_t>(i));
  };
  if (format == "ascii") {
    std::size_t p = pos;
    for (std::size_t i = 0; i < points; ++i) {
      std::vector<double> vals;
      while (p < data.size() && (data[p] == '\n' || data[p] == '\r')) ++p;
      std::size_t end = p;
      while (end < data.size() && data[end] != '\n') ++end;
      if (p >= data.size())
        fail(path, "ascii data ends after " + std::to_string(i) + " of " + std::to_string(points) + " points");
      const std::string line(reinterpret_cast<const char*>(data.data()) + p, end - p);
      p = end + 1;
      std::istringstream ls(line);
      std::string tok;
      while (ls >> tok) {
        char* e = nullptr;
        const double v = std::strtod(tok.c_str(), &e);
        if (*e != '\0') fail(path, "ascii point " + std::to_string(i) + ": '" + tok + "' is not a number");
        vals.push_back(v);
      }
      std::size_t want = 0;
      for (const auto& f : fields) want += f.count;
      if (vals.size() != want)
        fail(path, "ascii point " + std::to_string(i) + " has " + std::to_string(vals.size()) + " values, expected " +
                       std::to_string(want));
      std::size_t col[4] = {0, 0, 0, 0}, c = 0;
      for (std::size_t f = 0; f < fields.size(); ++f) {
        if (static_cast<int>(f) == ix) col[0] = c;
        if (static_cast<int>(f) == iy) col[1] = c;
        if (static_cast<int>(f) == iz) col[2] = c;
        if (static_cast<int>(f) == ii) col[3] = c;
        c += fields[f].count;
      }
      emit(i, vals[col[0]], vals[col[1]], vals[col[2]], ii >= 0 ? vals[col[3]] : 0.0);
    }
    require_blank_tail(data, std::min(p, data.size()), path);
  } else if (format == "binary") {
    require_blank_tail(data, pos + points * record, path);
    for (std::size_t i = 0; i < points; ++i) {
      const unsigned char* r = data.data() + pos + i * record;
      emit(i, read_scalar(r + fields[ix].offset, fields[ix]), read_scalar(r + fields[iy].offset, fields[iy]),
           read_scalar(r + fields[iz].offset, fields[iz]),
           ii >= 0 ? read_scalar(r + fields[ii].offset, fields[ii]) : 0.0);
    }
  } else if (format == "binary_compressed") {
    if (data.size() - pos < 8) fail(path, "binary_compressed data has no size header");
    std::uint32_t csize, usize;
    std::memcpy(&csize, data.data() + pos, 4);
    std::memcpy(&usize, data.data() + pos + 4, 4);
    if (data.size() - pos - 8 < csize) fail(path, "compressed block is truncated");
    if (usize != checked_mul(points, record, path, "POINTS x record size"))
      fail(path, "uncompressed size " + std::to_string(usize) +
                     " is not POINTS x record = " + std::to_string(points * record));
    // LZF expands at most ~88x (a 3-byte back reference copies 264 bytes)
    if (usize / 100 > csize + 64)
      fail(path, "uncompressed size " + std::to_string(usize) + " from " + std::to_string(csize) +
                     " compressed bytes is not LZF");
    require_blank_tail(data, pos + 8 + csize, path);
    pc.x.reserve(points);
    pc.y.reserve(points);
    pc.z.reserve(points);
    pc.source_index.reserve(points);
    const auto raw = lzf_decompress(data.data() + pos + 8, csize, usize, path);
    // column by column: field f occupies points * size * count bytes starting at points * offset
    auto at = [&](int f, std::size_t i) {
      return read_scalar(raw.data() + points * fields[f].offset + i * fields[f].size * fields[f].count, fields[f]);
    };
    for (std::size_t i = 0; i < points; ++i) emit(i, at(ix, i), at(iy, i), at(iz, i), ii >= 0 ? at(ii, i) : 0.0);
  } else {
    fail(path, "unknown DATA format '" + format + "' (ascii, binary, binary_compressed)");
  }
  return pc;
}

PointCloud read_point_cloud(const std::string& path) {
  auto ends = [&](const char* e) {
    return path.size() >= std::strlen(e) && path.compare(path.size() - std::strlen(e), std::strlen(e), e) == 0;
  };
  if (ends(".bin")) return read_kitti_bin(path);
  if (ends(".pcd")) return read_pcd(path);
  throw PointCloudError(path + ": unknown point-cloud format (expected .bin or .pcd)");
}

}  // namespace common
