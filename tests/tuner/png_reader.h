// Test helper: decodes the PNG screenshots headless Chromium writes (8-bit
// RGB or RGBA, not interlaced) so tests can check what a page looks like.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace tune::testing {

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // row-major, 3 bytes a pixel

  size_t distinct_colours() const {
    std::set<uint32_t> seen;
    for (size_t i = 0; i + 2 < rgb.size(); i += 3) seen.insert(rgb[i] << 16 | rgb[i + 1] << 8 | rgb[i + 2]);
    return seen.size();
  }
  // Share of pixels that are not (nearly) white.
  double inked() const {
    size_t ink = 0;
    for (size_t i = 0; i + 2 < rgb.size(); i += 3) ink += rgb[i] < 235 || rgb[i + 1] < 235 || rgb[i + 2] < 235;
    return rgb.empty() ? 0 : static_cast<double>(ink) / static_cast<double>(rgb.size() / 3);
  }
};

inline uint32_t png_u32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

inline Image read_png(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const uint8_t signature[8] = {137, 80, 78, 71, 13, 10, 26, 10};
  if (file.size() < 8 || !std::equal(signature, signature + 8, file.begin())) throw std::runtime_error(path + ": not a PNG");
  Image image;
  int channels = 0;
  std::vector<uint8_t> compressed;
  for (size_t at = 8; at + 12 <= file.size();) {
    const uint32_t length = png_u32(&file[at]);
    const std::string type(file.begin() + static_cast<long>(at) + 4, file.begin() + static_cast<long>(at) + 8);
    const uint8_t* body = &file[at + 8];
    if (at + 12 + length > file.size()) throw std::runtime_error(path + ": truncated");
    if (type == "IHDR") {
      image.width = static_cast<int>(png_u32(body));
      image.height = static_cast<int>(png_u32(body + 4));
      if (body[8] != 8 || (body[9] != 2 && body[9] != 6) || body[12] != 0) throw std::runtime_error(path + ": unsupported PNG");
      channels = body[9] == 6 ? 4 : 3;
    } else if (type == "IDAT") {
      compressed.insert(compressed.end(), body, body + length);
    }
    at += 12 + length;
  }
  const size_t stride = static_cast<size_t>(image.width) * static_cast<size_t>(channels);
  std::vector<uint8_t> raw((stride + 1) * static_cast<size_t>(image.height));
  uLongf size = raw.size();
  if (channels == 0 || uncompress(raw.data(), &size, compressed.data(), compressed.size()) != Z_OK || size != raw.size()) {
    throw std::runtime_error(path + ": bad image data");
  }
  std::vector<uint8_t> previous(stride, 0), row(stride);
  for (int y = 0; y < image.height; ++y) {
    const uint8_t* line = &raw[static_cast<size_t>(y) * (stride + 1)];
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= size_t(channels) ? row[x - channels] : 0, b = previous[x], c = x >= size_t(channels) ? previous[x - channels] : 0;
      const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
      const int predictor = line[0] == 1 ? a : line[0] == 2 ? b : line[0] == 3 ? (a + b) / 2
                          : line[0] == 4 ? (pa <= pb && pa <= pc ? a : pb <= pc ? b : c) : 0;
      row[x] = static_cast<uint8_t>(line[1 + x] + predictor);
    }
    for (int x = 0; x < image.width; ++x) {
      for (int k = 0; k < 3; ++k) image.rgb.push_back(row[static_cast<size_t>(x * channels + k)]);
    }
    previous = row;
  }
  return image;
}

}  // namespace tune::testing
