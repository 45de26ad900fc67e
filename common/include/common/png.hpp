// Minimal PNG writer (8-bit RGB) for the drivers' label images: deflate through zlib when the
// build found it, else valid but uncompressed "stored" blocks.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace common {

struct RgbImage {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;  // row-major, 3 bytes per pixel
  RgbImage(int w, int h, std::uint8_t fill = 255) : width(w), height(h), rgb(std::size_t(w) * h * 3, fill) {}
  void set(int x, int y, std::uint8_t r, std::uint8_t g, std::uint8_t b);
};

void write_png(const std::string& path, const RgbImage& img);  // throws std::runtime_error

}  // namespace common
