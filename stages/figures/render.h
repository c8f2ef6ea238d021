// The raster half of the report's figures: perceptual colour maps, matrices rendered to RGB images
// (heatmaps, pooled blocks) and PNG files through libpng. The figures themselves (SVG, and their PNG
// through librsvg) are figure.h's. No LibTorch, MPI or HDF5 here.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ctxsim {

using Rgb = std::array<uint8_t, 3>;

enum class ColourMap {
  Viridis,   // sequential, perceptually uniform: attention, rollout (0 = dark purple)
  Diverging  // blue – white – red, for signed similarity (0 = white)
};

// The colour of t in [0, 1] (clamped).
Rgb colour(ColourMap map, double t);

// An RGB image, row-major, 3 bytes per pixel.
struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;
  Image(int w, int h, Rgb fill = {255, 255, 255});
  Image() = default;
  Rgb at(int x, int y) const;
  void set(int x, int y, Rgb c);
};

// A rows x cols matrix (row-major) as an image with `cell` pixels per entry. Values map to
// [0, 1] by (v - lo) / (hi - lo); for Diverging, lo = -hi is expected so that 0 is the centre.
Image heatmap(const std::vector<float>& values, int rows, int cols, double lo, double hi, ColourMap map, int cell = 1);

// The colour scale of one context-similarity matrix, chosen from its off-diagonal values
// (the diagonal and [PAD] are zeroed by definition, not data): when they share a sign (at most
// 1% of the other sign), viridis over their 1st to 99th percentile, so that the structure shows
// instead of one saturated colour; else (or when they are all the same) the diverging map over
// ±(99th percentile of |v|), 0 white.
// Values outside [lo, hi] are clamped.
struct ValueScale {
  double lo = -1, hi = 1;
  ColourMap map = ColourMap::Diverging;
  std::string describe() const;  // "viridis 1st–99th percentile 12.3 to 45.6", for colour bars
};
ValueScale similarity_scale(const std::vector<float>& matrix, int n);  // n x n, row-major

// Whether this build draws figures (-DCTXSIM_FIGURES, default ON: libpng and librsvg); GPU
// builds may leave them out. require_figures throws, naming `what`, when it does not.
bool figures_available();
void require_figures(const std::string& what);

void write_png(const std::string& path, const Image& image);  // throws ctxsim::Error
Image read_png(const std::string& path);                      // for tests and checks
std::string encode_png(const Image& image);                   // the PNG file's bytes

// Block pooling (mean over b x b blocks) so that large matrices stay renderable: [rows/b, cols/b].
std::vector<float> pool_blocks(const std::vector<float>& values, int rows, int cols, int block, int& out_rows, int& out_cols);

}  // namespace ctxsim
