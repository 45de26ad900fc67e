#include "common/png.hpp"
#include "common/output_file.hpp"

#include <cstdio>
#include <stdexcept>

#ifdef COURSE_HAVE_ZLIB
#include <zlib.h>
#endif

namespace common {
namespace {

std::uint32_t crc32(const std::uint8_t* p, std::size_t n, std::uint32_t c = 0xffffffffu) {
  static std::uint32_t table[256];
  static bool ready = false;
  if (!ready) {
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t v = i;
      for (int k = 0; k < 8; ++k) v = v & 1 ? 0xedb88320u ^ (v >> 1) : v >> 1;
      table[i] = v;
    }
    ready = true;
  }
  for (std::size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c;
}

void put32(std::vector<std::uint8_t>& v, std::uint32_t x) {
  for (int s = 24; s >= 0; s -= 8) v.push_back(static_cast<std::uint8_t>(x >> s));
}

void chunk(std::vector<std::uint8_t>& out, const char* type, const std::vector<std::uint8_t>& data) {
  put32(out, static_cast<std::uint32_t>(data.size()));
  const std::size_t start = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  put32(out, crc32(out.data() + start, out.size() - start) ^ 0xffffffffu);
}

}  // namespace

void RgbImage::set(int x, int y, std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  if (x < 0 || y < 0 || x >= width || y >= height) return;
  std::uint8_t* p = &rgb[(std::size_t(y) * width + x) * 3];
  p[0] = r;
  p[1] = g;
  p[2] = b;
}

void write_png(const std::string& path, const RgbImage& img) {
  std::vector<std::uint8_t> raw;  // filter byte 0 + row
  raw.reserve(std::size_t(img.height) * (img.width * 3 + 1));
  for (int y = 0; y < img.height; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), img.rgb.begin() + std::size_t(y) * img.width * 3,
               img.rgb.begin() + std::size_t(y + 1) * img.width * 3);
  }
  std::vector<std::uint8_t> z;
#ifdef COURSE_HAVE_ZLIB
  uLongf zlen = compressBound(static_cast<uLong>(raw.size()));
  z.resize(zlen);
  if (compress2(z.data(), &zlen, raw.data(), static_cast<uLong>(raw.size()), 9) != Z_OK)
    throw std::runtime_error("zlib failed on image '" + path + "'");
  z.resize(zlen);
#else
  z = {0x78, 0x01};  // no zlib: a valid zlib stream of stored (uncompressed) blocks
  std::uint32_t a = 1, b = 0;
  for (std::uint8_t v : raw) {
    a = (a + v) % 65521;
    b = (b + a) % 65521;
  }
  for (std::size_t off = 0; off < raw.size() || off == 0; off += 65535) {
    const std::size_t len = std::min<std::size_t>(65535, raw.size() - off);
    z.push_back(off + len >= raw.size() ? 1 : 0);
    z.push_back(static_cast<std::uint8_t>(len));
    z.push_back(static_cast<std::uint8_t>(len >> 8));
    z.push_back(static_cast<std::uint8_t>(~len));
    z.push_back(static_cast<std::uint8_t>(~len >> 8));
    z.insert(z.end(), raw.begin() + off, raw.begin() + off + len);
    if (raw.empty()) break;
  }
  put32(z, (b << 16) | a);
#endif
  std::vector<std::uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<std::uint8_t> ihdr;
  put32(ihdr, img.width);
  put32(ihdr, img.height);
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});  // 8-bit, RGB, deflate, no filter method, no interlace
  chunk(out, "IHDR", ihdr);
  chunk(out, "IDAT", z);
  chunk(out, "IEND", {});
  write_file_atomic(path, [&](std::ostream& os) {
    os.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
  });
}

}  // namespace common
