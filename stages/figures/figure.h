// Publication figures, described once as SVG (editable, text stays text) and rasterised to PNG
// by librsvg, so both formats show the same axes, labels, colour bars and legends. Heatmaps,
// line and bar charts in panels (small multiples), and the layout of every plot area so that
// tests and tools can find a cell's pixels. No LibTorch, MPI or HDF5 here.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "stages/figures/render.h"

namespace ctxsim {

// A plot area in figure pixels (PNGs are rendered at 1 px per SVG unit).
struct PlotArea {
  double x = 0, y = 0, w = 0, h = 0;
  int rows = 0, cols = 0;  // heatmaps: cell (r, c) covers [x + c*w/cols, …) x [y + r*h/rows, …)
};

struct Figure {
  std::string svg;
  int width = 0, height = 0;
  std::vector<PlotArea> panels;
};

// Cells of a heatmap drawn on top of it (e.g. the selected pairs, the high-attention mask).
struct Overlay {
  enum class Shape { Outline, Dot };
  std::string name;  // for the legend
  Shape shape = Shape::Outline;
  Rgb colour{0, 0, 0};
  std::vector<std::pair<int, int>> cells;  // (row, column)
};

struct HeatmapSpec {
  std::vector<float> values;  // rows x cols, row-major
  int rows = 0, cols = 0;
  double lo = 0, hi = 1;  // colour range; Diverging expects lo = -hi so that 0 is the centre, unless `centre` is set
  // Diverging around a value other than 0 (a rate around its chance): `centre` is drawn white and
  // both sides keep one slope, so the side farther from it saturates and the nearer one does not;
  // the colour bar shows lo..hi. NaN: no centre.
  double centre = std::numeric_limits<double>::quiet_NaN();
  ColourMap map = ColourMap::Viridis;
  std::vector<std::string> row_labels, col_labels;  // may be thinned to stay legible
  std::string x_label, y_label, bar_label;
  std::vector<std::string> cell_text;  // optional text inside each cell (tables of tokens)
  std::vector<Overlay> overlays;
  double cell = 0;  // pixels per cell; 0: chosen from the size
  // Non-empty: the cells above the diagonal (column > row) hold no value (a causal model's
  // attention) and are drawn grey, with this text in the legend.
  std::string masked_upper;
};

struct Series {
  std::string name;
  std::vector<double> x, y;
  Rgb colour{31, 119, 180};
  bool dashed = false;
  bool bars = false;
  bool points = false;  // a scatter: a dot at each (x, y), no line
  // An interval at each x (both as long as x, or empty): a line's is drawn as a translucent band
  // in its colour, a bar's as a whisker with caps.
  std::vector<double> lo = {}, hi = {};
};
// Bar series of one panel are grouped: at each x, n bar series share 0.8 of the spacing of x,
// side by side in their order, each 0.8/n wide (give every series the category's own x).

// The x values 0, 1, …, n-1 of a series over an index (layers, gaps).
inline std::vector<double> index_axis(int64_t n) {
  std::vector<double> x;
  for (int64_t i = 0; i < n; ++i) x.push_back(double(i));
  return x;
}

struct PlotSpec {
  std::string title;
  std::string x_label, y_label;
  std::vector<Series> series;
  double x_lo = std::numeric_limits<double>::quiet_NaN(), x_hi = x_lo, y_lo = x_lo, y_hi = x_lo;  // NaN: from the data
  std::vector<std::string> x_ticks;  // categorical x axis: labels at x = 0, 1, …
  bool x_integer = false;            // x is an index (layer, head, distance): ticks at whole numbers only
  bool legend = true;
};

// title: what is shown; subtitle: which run (and any note such as block pooling).
Figure heatmap_figure(const HeatmapSpec& spec, const std::string& title, const std::string& subtitle);
Figure plot_figure(const std::vector<PlotSpec>& panels, int columns, double panel_w, double panel_h, const std::string& title,
                   const std::string& subtitle);

// Tick positions for [lo, hi]: multiples of a step of 1, 2 or 5 times a power of ten giving
// about `target` intervals (at most 2 x target); integer_only: a step of at least 1 (an index
// axis never gets 0.5). lo >= hi: the one tick lo.
std::vector<double> nice_ticks(double lo, double hi, int target, bool integer_only = false);

// The colour of series k of n along viridis (dark to light, the pale end left out for contrast).
Rgb sequence_colour(int k, int n);

// Renders an SVG to PNG through librsvg (throws ctxsim::Error naming path).
void svg_to_png(const std::string& svg, const std::string& path);

// Writes DIR/STEM.svg and DIR/STEM.png (each through a temporary file and a rename).
void write_figure(const Figure& figure, const std::string& dir, const std::string& stem);

std::string xml_escape(const std::string& s);

}  // namespace ctxsim
