#include "stages/figures/render.h"

#ifndef CTXSIM_NO_FIGURES
#include <png.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "stages/base/error.h"
#include "stages/base/files.h"

namespace ctxsim {

bool figures_available() {
#ifdef CTXSIM_NO_FIGURES
  return false;
#else
  return true;
#endif
}

void require_figures(const std::string& what) {
  if (!figures_available())
    throw Error(what, "this ctxsim was built without figures (-DCTXSIM_FIGURES=OFF: no libpng or librsvg)",
                "reconfigure with -DCTXSIM_FIGURES=ON, or set output.report=false");
}
namespace {

// Anchor points of matplotlib's viridis (at 0, 1/8, …, 1), linearly interpolated.
constexpr std::array<std::array<double, 3>, 9> kViridis = {{{0.267, 0.005, 0.329},
                                                            {0.283, 0.141, 0.458},
                                                            {0.254, 0.265, 0.530},
                                                            {0.207, 0.372, 0.553},
                                                            {0.164, 0.471, 0.558},
                                                            {0.128, 0.567, 0.551},
                                                            {0.135, 0.659, 0.518},
                                                            {0.267, 0.749, 0.441},
                                                            {0.993, 0.906, 0.144}}};

uint8_t byte(double v) { return static_cast<uint8_t>(std::lround(std::clamp(v, 0.0, 1.0) * 255.0)); }

}  // namespace

Rgb colour(ColourMap map, double t) {
  t = std::isnan(t) ? 0.0 : std::clamp(t, 0.0, 1.0);
  if (map == ColourMap::Diverging) {
    // 0 → blue (0.23, 0.30, 0.75), 0.5 → white, 1 → red (0.71, 0.02, 0.15)
    const double u = t < 0.5 ? 1.0 - 2.0 * t : 2.0 * t - 1.0;  // distance from the centre
    const std::array<double, 3> end = t < 0.5 ? std::array<double, 3>{0.23, 0.30, 0.75} : std::array<double, 3>{0.71, 0.02, 0.15};
    return {byte(1.0 + (end[0] - 1.0) * u), byte(1.0 + (end[1] - 1.0) * u), byte(1.0 + (end[2] - 1.0) * u)};
  }
  const double x = t * 8.0;
  const int i = std::min(7, static_cast<int>(x));
  const double f = x - i;
  return {byte(kViridis[size_t(i)][0] + (kViridis[size_t(i + 1)][0] - kViridis[size_t(i)][0]) * f),
          byte(kViridis[size_t(i)][1] + (kViridis[size_t(i + 1)][1] - kViridis[size_t(i)][1]) * f),
          byte(kViridis[size_t(i)][2] + (kViridis[size_t(i + 1)][2] - kViridis[size_t(i)][2]) * f)};
}

Image::Image(int w, int h, Rgb fill) : width(w), height(h), pixels(size_t(w) * size_t(h) * 3) {
  for (size_t i = 0; i < pixels.size(); i += 3) std::copy(fill.begin(), fill.end(), pixels.begin() + long(i));
}

Rgb Image::at(int x, int y) const {
  const size_t o = (size_t(y) * size_t(width) + size_t(x)) * 3;
  return {pixels[o], pixels[o + 1], pixels[o + 2]};
}

void Image::set(int x, int y, Rgb c) {
  const size_t o = (size_t(y) * size_t(width) + size_t(x)) * 3;
  std::copy(c.begin(), c.end(), pixels.begin() + long(o));
}

ValueScale similarity_scale(const std::vector<float>& m, int n) {
  std::vector<float> off;
  off.reserve(size_t(n) * size_t(std::max(0, n - 1)));
  size_t negative = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (i != j && std::isfinite(m[size_t(i) * size_t(n) + size_t(j)])) {
        off.push_back(m[size_t(i) * size_t(n) + size_t(j)]);
        negative += off.back() < 0;
      }
  ValueScale s;
  if (off.empty()) return s;
  const auto quantile = [&](std::vector<float>& v, double q) {
    const auto k = v.begin() + long(std::lround(q * double(v.size() - 1)));
    std::nth_element(v.begin(), k, v.end());
    return double(*k);
  };
  const double share = double(negative) / double(off.size());
  if (share <= 0.01 || share >= 0.99) {
    const double lo = quantile(off, 0.01), hi = quantile(off, 0.99);
    if (hi > lo) {
      s.map = ColourMap::Viridis;
      s.lo = lo, s.hi = hi;
      return s;
    }
    // A constant matrix has no structure to show: the diverging map says its sign (0: white).
  }
  for (float& v : off) v = std::abs(v);
  s.hi = std::max(1e-9, quantile(off, 0.99));
  s.lo = -s.hi;
  return s;
}

std::string ValueScale::describe() const {
  char buf[96];
  if (map == ColourMap::Viridis)
    std::snprintf(buf, sizeof buf, "1st-99th percentile %.4g to %.4g", lo, hi);
  else
    std::snprintf(buf, sizeof buf, "0 white, ±%.3g (99th percentile of |v|)", hi);
  return buf;
}

Image heatmap(const std::vector<float>& v, int rows, int cols, double lo, double hi, ColourMap map, int cell) {
  CTXSIM_CHECK(v.size() == size_t(rows) * size_t(cols), "heatmap: values do not match rows x cols");
  Image img(cols * cell, rows * cell);
  const double span = hi > lo ? hi - lo : 1.0;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const Rgb col = colour(map, (double(v[size_t(r) * size_t(cols) + size_t(c)]) - lo) / span);
      for (int y = 0; y < cell; ++y)
        for (int x = 0; x < cell; ++x) img.set(c * cell + x, r * cell + y, col);
    }
  return img;
}

#ifndef CTXSIM_NO_FIGURES
std::string encode_png(const Image& image) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  std::string out;
  if (!png || !info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    CTXSIM_FAIL("libpng failed to encode an image");
  }
  png_set_write_fn(
      png, &out,
      [](png_structp p, png_bytep data, png_size_t n) {
        static_cast<std::string*>(png_get_io_ptr(p))->append(reinterpret_cast<char*>(data), n);
      },
      nullptr);
  png_set_IHDR(png, info, png_uint_32(image.width), png_uint_32(image.height), 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < image.height; ++y)
    png_write_row(png, const_cast<png_bytep>(image.pixels.data() + size_t(y) * size_t(image.width) * 3));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

#else
std::string encode_png(const Image&) {
  require_figures("PNG");
  return {};
}
#endif

void write_png(const std::string& path, const Image& image) { atomic_write(path, encode_png(image)); }

#ifndef CTXSIM_NO_FIGURES
Image read_png(const std::string& path) {
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&img, path.c_str()))
    throw Error(path, std::string("not a readable PNG: ") + img.message, "regenerate it");
  img.format = PNG_FORMAT_RGB;
  Image out(int(img.width), int(img.height));
  if (!png_image_finish_read(&img, nullptr, out.pixels.data(), 0, nullptr)) {
    png_image_free(&img);
    throw Error(path, std::string("PNG decoding failed: ") + img.message, "regenerate it");
  }
  return out;
}
#else
Image read_png(const std::string&) {
  require_figures("PNG");
  return Image(0, 0);
}
#endif

std::vector<float> pool_blocks(const std::vector<float>& v, int rows, int cols, int block, int& out_rows, int& out_cols) {
  block = std::max(1, block);
  out_rows = (rows + block - 1) / block;
  out_cols = (cols + block - 1) / block;
  std::vector<double> sum(size_t(out_rows) * size_t(out_cols), 0.0), n(sum.size(), 0.0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const size_t o = size_t(r / block) * size_t(out_cols) + size_t(c / block);
      sum[o] += v[size_t(r) * size_t(cols) + size_t(c)];
      n[o] += 1;
    }
  std::vector<float> out(sum.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = float(sum[i] / n[i]);
  return out;
}

}  // namespace ctxsim
