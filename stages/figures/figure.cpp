#include "stages/figures/figure.h"

#include "stages/base/digest.h"

#ifndef CTXSIM_NO_FIGURES
#include <librsvg/rsvg.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "stages/base/error.h"
#include "stages/base/files.h"

namespace ctxsim {
namespace {

std::string hex(Rgb c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c[0], c[1], c[2]);
  return buf;
}

// Numbers in SVG coordinates and tick labels: short, locale-independent.
std::string num(double v, int digits = 4) {
  if (std::abs(v) < 1e-12) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

double text_width(const std::string& s, double font) {
  size_t chars = 0;
  for (unsigned char ch : s) chars += (ch & 0xC0) != 0x80;  // count code points, not bytes
  return 0.6 * font * double(chars);
}

struct Svg {
  std::ostringstream s;
  void text(double x, double y, const std::string& t, double font, const std::string& anchor = "start", double rotate = 0,
            const std::string& extra = "") {
    s << "<text x=\"" << num(x, 6) << "\" y=\"" << num(y, 6) << "\" font-size=\"" << num(font, 3) << "\"";
    if (anchor != "start") s << " text-anchor=\"" << anchor << "\"";
    if (rotate != 0) s << " transform=\"rotate(" << num(rotate) << " " << num(x, 6) << " " << num(y, 6) << ")\"";
    s << extra << ">" << xml_escape(t) << "</text>\n";
  }
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& extra = "") {
    s << "<rect x=\"" << num(x, 6) << "\" y=\"" << num(y, 6) << "\" width=\"" << num(w, 6) << "\" height=\"" << num(h, 6) << "\" fill=\""
      << fill << "\"" << extra << "/>\n";
  }
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1, const std::string& extra = "") {
    s << "<line x1=\"" << num(x1, 6) << "\" y1=\"" << num(y1, 6) << "\" x2=\"" << num(x2, 6) << "\" y2=\"" << num(y2, 6) << "\" stroke=\""
      << stroke << "\" stroke-width=\"" << num(width, 3) << "\"" << extra << "/>\n";
  }
};

std::string open_svg(int w, int h, const std::string& title) {
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h << "\" viewBox=\"0 0 " << w << " " << h
    << "\" font-family=\"DejaVu Sans, sans-serif\">\n<title>" << xml_escape(title) << "</title>\n<rect width=\"" << w << "\" height=\"" << h
    << "\" fill=\"white\"/>\n";
  return s.str();
}

void titles(Svg& g, const std::string& title, const std::string& subtitle) {
  g.text(12, 22, title, 15, "start", 0, " font-weight=\"bold\"");
  if (!subtitle.empty()) g.text(12, 40, subtitle, 11, "start", 0, " fill=\"#555\"");
}

// Which of n labels to print so that they are at least `min_gap` pixels apart.
int label_step(double spacing, double min_gap) { return std::max(1, int(std::ceil(min_gap / std::max(spacing, 1e-9)))); }

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    switch (ch) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += ch;
    }
  }
  return o;
}

std::vector<double> nice_ticks(double lo, double hi, int target, bool integer_only) {
  if (!(hi > lo)) return {integer_only ? std::round(lo) : lo};
  const double raw = (hi - lo) / std::max(1, target), p = std::pow(10.0, std::floor(std::log10(raw)));
  double step = raw / p < 1.5 ? p : raw / p < 3.5 ? 2 * p : raw / p < 7.5 ? 5 * p : 10 * p;
  if (integer_only) step = std::max(1.0, std::round(step));  // 1, 2, 5, 10, …: whole already when >= 1
  std::vector<double> t;
  // Each tick as k * step (not by repeated addition): 0.1 * 3 is 0.3 within one rounding, a sum drifts.
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; ++k) t.push_back(k == 0 ? 0.0 : k * step);
  return t;
}

Rgb sequence_colour(int k, int n) { return colour(ColourMap::Viridis, n > 1 ? 0.88 * k / (n - 1) : 0.0); }

namespace {

// Where a heatmap's parts go: cell size, plot area, margins, label steps.
struct HeatmapLayout {
  bool raster = false;
  double cell = 0, font = 0, row_w = 0, col_h = 0, pw = 0, ph = 0, left = 0, top = 0, bar_x = 0;
  double clo = 0, span = 1;  // colours: t = (v - clo) / span (clo = lo, span = hi - lo unless diverging around a centre)
  int step = 1, W = 0, H = 0;
};

HeatmapLayout heatmap_layout(const HeatmapSpec& m, const std::string& title, const std::string& subtitle) {
  HeatmapLayout k;
  // Large matrices are one embedded raster at a whole number of pixels per cell (drawn 1:1,
  // so that no renderer smooths it); small ones are one rect per cell, editable.
  k.raster = size_t(m.rows) * size_t(m.cols) > 4096;
  k.cell = m.cell > 0 ? m.cell : std::clamp(720.0 / std::max(m.rows, m.cols), 1.0, 28.0);
  if (k.raster) k.cell = std::max(1.0, std::floor(k.cell));
  k.font = std::clamp(k.cell - 1, 6.0, 11.0);
  k.step = label_step(k.cell, k.font + 1);  // rows and columns alike
  for (int i = 0; i < m.rows && i < int(m.row_labels.size()); i += k.step)
    k.row_w = std::max(k.row_w, text_width(m.row_labels[size_t(i)], k.font));
  for (int i = 0; i < m.cols && i < int(m.col_labels.size()); i += k.step)
    k.col_h = std::max(k.col_h, text_width(m.col_labels[size_t(i)], k.font));
  k.pw = k.cell * m.cols, k.ph = k.cell * m.rows;
  k.left = std::ceil(12 + (m.y_label.empty() ? 0 : 18) + k.row_w + 6), k.top = subtitle.empty() ? 38 : 54;
  k.bar_x = k.left + k.pw + 14;
  double legend_w = 0;
  for (const auto& o : m.overlays) legend_w = std::max(legend_w, 22 + text_width(o.name, 11));
  const double right = 14 + 14 + 48 + (m.bar_label.empty() ? 0 : 16);
  const double legend_lines = double(m.overlays.size()) + (m.masked_upper.empty() ? 0 : 1);
  const double bottom = k.col_h + 8 + (m.x_label.empty() ? 0 : 20) + 18.0 * legend_lines + 10;
  k.W =
      int(std::ceil(std::max({k.left + k.pw + right, text_width(title, 15) + 24, text_width(subtitle, 11) + 24, k.left + legend_w + 10})));
  k.H = int(std::ceil(k.top + k.ph + bottom));
  k.clo = m.lo, k.span = m.hi > m.lo ? m.hi - m.lo : 1.0;
  if (std::isfinite(m.centre)) {  // one slope on both sides of the centre: its range is the wider side, mirrored
    const double half = std::max({m.hi - m.centre, m.centre - m.lo, 1e-12});
    k.clo = m.centre - half, k.span = 2 * half;
  }
  return k;
}

constexpr const char* kMaskedGrey = "#d9d9d9";

// The cells (one raster or a rect each), their text, and the overlays on them.
void heatmap_cells(Svg& g, const HeatmapSpec& m, const HeatmapLayout& k) {
  const double left = k.left, top = k.top, cell = k.cell;
  if (k.raster) {
    g.s << "<image x=\"" << num(left, 6) << "\" y=\"" << num(top, 6) << "\" width=\"" << num(k.pw, 6) << "\" height=\"" << num(k.ph, 6)
        << "\" image-rendering=\"optimizeSpeed\" href=\"data:image/png;base64,"
        << base64(encode_png(heatmap(m.values, m.rows, m.cols, k.clo, k.clo + k.span, m.map, int(cell)))) << "\"/>\n";
  } else {
    for (int r = 0; r < m.rows; ++r)
      for (int c = 0; c < m.cols; ++c)
        g.rect(left + c * cell, top + r * cell, cell, cell,
               hex(colour(m.map, (double(m.values[size_t(r) * size_t(m.cols) + size_t(c)]) - k.clo) / k.span)));
  }
  if (!m.cell_text.empty()) {
    for (int r = 0; r < m.rows; ++r)
      for (int c = 0; c < m.cols; ++c) {
        const std::string& t = m.cell_text[size_t(r) * size_t(m.cols) + size_t(c)];
        if (t.empty()) continue;
        const double t_norm = (double(m.values[size_t(r) * size_t(m.cols) + size_t(c)]) - k.clo) / k.span;
        const double f = std::min(k.font, 0.9 * cell / std::max<double>(1.0, text_width(t, 1.0)));
        g.text(left + (c + 0.5) * cell, top + (r + 0.5) * cell + f * 0.35, t, f, "middle", 0,
               t_norm > 0.6 && m.map == ColourMap::Viridis ? "" : " fill=\"white\"");
      }
  }
  if (!m.masked_upper.empty())
    for (int r = 0; r + 1 < m.rows && r + 1 < m.cols; ++r)
      g.rect(left + (r + 1) * cell, top + r * cell, (m.cols - r - 1) * cell, cell, kMaskedGrey);
  for (const auto& o : m.overlays)
    for (const auto& [r, c] : o.cells) {
      if (o.shape == Overlay::Shape::Outline)
        g.rect(left + c * cell, top + r * cell, cell, cell, "none",
               " stroke=\"" + hex(o.colour) + "\" stroke-width=\"" + num(std::max(0.5, cell * 0.15), 3) + "\"");
      else
        g.s << "<circle cx=\"" << num(left + (c + 0.5) * cell, 6) << "\" cy=\"" << num(top + (r + 0.5) * cell, 6) << "\" r=\""
            << num(std::max(0.6, cell * 0.28), 3) << "\" fill=\"" << hex(o.colour) << "\"/>\n";
    }
}

// The frame, row and column labels, axis titles, the colour bar with ticks and the overlays' legend.
void heatmap_frame(Svg& g, const HeatmapSpec& m, const HeatmapLayout& k) {
  const double left = k.left, top = k.top, pw = k.pw, ph = k.ph, cell = k.cell, font = k.font, bar_x = k.bar_x;
  g.rect(left, top, pw, ph, "none", " stroke=\"#333\" stroke-width=\"0.6\"");
  for (int i = 0; i < m.rows && i < int(m.row_labels.size()); i += k.step)
    g.text(left - 4, top + (i + 0.5) * cell + font * 0.35, m.row_labels[size_t(i)], font, "end");
  for (int i = 0; i < m.cols && i < int(m.col_labels.size()); i += k.step)
    g.text(left + (i + 0.5) * cell + font * 0.35, top + ph + 4, m.col_labels[size_t(i)], font, "start", 90);
  if (!m.y_label.empty()) g.text(20, top + ph / 2, m.y_label, 12, "middle", -90);
  if (!m.x_label.empty()) g.text(left + pw / 2, top + ph + k.col_h + 22, m.x_label, 12, "middle");
  // Colour bar: lo at the bottom, hi at the top, with ticks (and a line at the centre of a
  // diverging map around a value).
  const int steps = 64;
  const double bar_span = m.hi > m.lo ? m.hi - m.lo : 1.0;
  const auto bar_y = [&](double v) { return top + ph * (1 - (v - m.lo) / bar_span); };
  for (int s = 0; s < steps; ++s)
    g.rect(bar_x, top + ph * (steps - 1 - s) / steps, 14, ph / steps + 0.5,
           hex(colour(m.map, (m.lo + (s + 0.5) / steps * bar_span - k.clo) / k.span)));
  g.rect(bar_x, top, 14, ph, "none", " stroke=\"#333\" stroke-width=\"0.6\"");
  if (std::isfinite(m.centre) && m.centre >= m.lo && m.centre <= m.hi) g.line(bar_x, bar_y(m.centre), bar_x + 14, bar_y(m.centre), "#333");
  const std::vector<double> ticks = nice_ticks(m.lo, m.hi, 4);
  // Enough significant digits that neighbouring ticks differ (13.05 and 13.1, not 13.1 twice).
  int digits = 3;
  const double largest = std::max(std::abs(m.lo), std::abs(m.hi));
  if (ticks.size() > 1 && largest > 0) digits = std::clamp(int(std::ceil(std::log10(largest / (ticks[1] - ticks[0])))) + 1, 3, 8);
  for (double t : ticks) {
    const double y = bar_y(t);
    g.line(bar_x + 14, y, bar_x + 18, y, "#333");
    g.text(bar_x + 20, y + 3.5, num(t, digits), 10);
  }
  if (!m.bar_label.empty()) g.text(bar_x + 68, top + ph / 2, m.bar_label, 11, "middle", 90);
  double ly = top + ph + k.col_h + (m.x_label.empty() ? 20 : 40);
  for (const auto& o : m.overlays) {
    if (o.shape == Overlay::Shape::Outline)
      g.rect(left, ly - 9, 10, 10, o.colour == Rgb{255, 255, 255} ? "#555" : "#ddd",
             " stroke=\"" + hex(o.colour) + "\" stroke-width=\"2\"");
    else
      g.s << "<circle cx=\"" << num(left + 5) << "\" cy=\"" << num(ly - 4) << "\" r=\"4\" fill=\"" << hex(o.colour) << "\"/>\n";
    g.text(left + 16, ly, o.name, 11);
    ly += 18;
  }
  if (!m.masked_upper.empty()) {
    g.rect(left, ly - 9, 10, 10, kMaskedGrey, " stroke=\"#999\" stroke-width=\"0.6\"");
    g.text(left + 16, ly, m.masked_upper, 11);
  }
}

}  // namespace

Figure heatmap_figure(const HeatmapSpec& m, const std::string& title, const std::string& subtitle) {
  CTXSIM_CHECK(m.values.size() == size_t(m.rows) * size_t(m.cols) && m.rows > 0 && m.cols > 0,
               "heatmap_figure: values do not match rows x cols");
  const HeatmapLayout k = heatmap_layout(m, title, subtitle);
  Svg g;
  titles(g, title, subtitle);
  heatmap_cells(g, m, k);
  heatmap_frame(g, m, k);
  Figure f;
  f.width = k.W;
  f.height = k.H;
  f.svg = open_svg(k.W, k.H, title) + g.s.str() + "</svg>\n";
  f.panels.push_back({k.left, k.top, k.pw, k.ph, m.rows, m.cols});
  return f;
}

namespace {

// A panel's data bounds and its place on the page: where a value lands.
struct PanelAxes {
  double xl, xh, yl, yh;  // the bounds drawn
  double x0, y0, pw, ph;  // the panel's box
  double X(double x) const { return x0 + (x - xl) / (xh - xl) * pw; }
  double Y(double y) const { return y0 + ph - (y - yl) / (yh - yl) * ph; }
  double Yc(double y) const { return Y(std::clamp(y, yl, yh)); }  // clamped into the panel
};

// The bounds from the data (finite values and intervals) where the spec leaves them open.
PanelAxes panel_axes(const PlotSpec& p, double x0, double y0, double pw, double ph) {
  double xl = p.x_lo, xh = p.x_hi, yl = p.y_lo, yh = p.y_hi;
  double dxl = INFINITY, dxh = -INFINITY, dyl = 0, dyh = -INFINITY;
  for (const auto& s : p.series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;
      dxl = std::min(dxl, s.x[i]), dxh = std::max(dxh, s.x[i]), dyl = std::min(dyl, s.y[i]), dyh = std::max(dyh, s.y[i]);
      if (i < s.lo.size() && i < s.hi.size() && std::isfinite(s.lo[i]) && std::isfinite(s.hi[i]))
        dyl = std::min(dyl, s.lo[i]), dyh = std::max(dyh, s.hi[i]);
    }
  const bool bars = std::any_of(p.series.begin(), p.series.end(), [](const Series& s) { return s.bars; });
  if (std::isnan(xl)) xl = std::isfinite(dxl) ? dxl - (bars ? 0.5 : 0) : 0;
  if (std::isnan(xh)) xh = std::isfinite(dxh) ? dxh + (bars ? 0.5 : 0) : 1;
  if (std::isnan(yl)) yl = dyl;
  if (std::isnan(yh)) yh = std::isfinite(dyh) && dyh > yl ? yl + (dyh - yl) * 1.08 : yl + 1;
  if (!(xh > xl) && p.x_integer) xl -= 0.5, xh += 0.5;  // one layer: its one tick in the middle
  if (!(xh > xl)) xh = xl + 1;
  if (!(yh > yl)) yh = yl + 1;
  return {xl, xh, yl, yh, x0, y0, pw, ph};
}

// The title, the horizontal grid with its y ticks, and the x ticks (numbers, or the spec's labels).
void panel_grid(Svg& g, const PlotSpec& p, const PanelAxes& a) {
  g.text(a.x0, a.y0 - 7, p.title, 12, "start", 0, " font-weight=\"bold\"");
  for (double t : nice_ticks(a.yl, a.yh, 4)) {
    g.line(a.x0, a.Y(t), a.x0 + a.pw, a.Y(t), "#e4e4e4", 0.8);
    g.text(a.x0 - 5, a.Y(t) + 3.5, num(t, 3), 10, "end");
  }
  if (p.x_ticks.empty()) {
    for (double t : nice_ticks(a.xl, a.xh, 5, p.x_integer)) {
      g.line(a.X(t), a.y0 + a.ph, a.X(t), a.y0 + a.ph + 4, "#333");
      g.text(a.X(t), a.y0 + a.ph + 15, num(t, 3), 10, "middle");
    }
  } else {
    const int step = label_step(a.pw / double(p.x_ticks.size()), 10);
    for (size_t i = 0; i < p.x_ticks.size(); i += size_t(step)) g.text(a.X(double(i)) + 3, a.y0 + a.ph + 5, p.x_ticks[i], 9, "start", 90);
  }
}

// A bar series, `offset` from its x and `bw` wide, with its intervals as whiskers with caps.
void bar_series(Svg& g, const Series& s, const PanelAxes& a, double offset, double bw) {
  const double base = a.Y(std::max(a.yl, 0.0));
  for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
    if (std::isfinite(s.y[i]))
      g.rect(a.X(s.x[i]) + offset - bw / 2, std::min(a.Y(s.y[i]), base), bw, std::abs(a.Y(s.y[i]) - base), hex(s.colour));
  for (size_t i = 0; i < s.x.size() && i < s.lo.size() && i < s.hi.size(); ++i)
    if (std::isfinite(s.lo[i]) && std::isfinite(s.hi[i])) {
      const double cx = a.X(s.x[i]) + offset, top = a.Yc(s.hi[i]), bottom = a.Yc(s.lo[i]);
      const double cap = std::min(4.0, bw / 3);
      g.line(cx, top, cx, bottom, "#222", 1.2);
      g.line(cx - cap, top, cx + cap, top, "#222", 1.2);
      g.line(cx - cap, bottom, cx + cap, bottom, "#222", 1.2);
    }
}

// A series as points, or as a line over the band of its interval, `width` wide.
void line_series(Svg& g, const Series& s, const PanelAxes& a, double width) {
  if (s.points) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i]))
        g.s << "<circle cx=\"" << num(a.X(s.x[i]), 6) << "\" cy=\"" << num(a.Yc(s.y[i]), 6) << "\" r=\"3\" fill=\"" << hex(s.colour)
            << "\" fill-opacity=\"0.8\"/>\n";
    return;
  }
  if (!s.lo.empty() && s.lo.size() == s.x.size() && s.hi.size() == s.x.size()) {  // the interval: a band under the line
    std::ostringstream band;
    for (size_t i = 0; i < s.x.size(); ++i)
      if (std::isfinite(s.hi[i])) band << num(a.X(s.x[i]), 6) << "," << num(a.Yc(s.hi[i]), 6) << " ";
    for (size_t i = s.x.size(); i-- > 0;)
      if (std::isfinite(s.lo[i])) band << num(a.X(s.x[i]), 6) << "," << num(a.Yc(s.lo[i]), 6) << " ";
    g.s << "<polygon class=\"interval\" fill=\"" << hex(s.colour) << "\" fill-opacity=\"0.22\" stroke=\"none\" points=\"" << band.str()
        << "\"/>\n";
    // A band of one point is a line: a whisker shows it.
    if (s.x.size() == 1 && std::isfinite(s.lo[0]) && std::isfinite(s.hi[0]))
      g.line(a.X(s.x[0]), a.Yc(s.hi[0]), a.X(s.x[0]), a.Yc(s.lo[0]), hex(s.colour), 3);
  }
  std::ostringstream pts;
  for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
    if (std::isfinite(s.y[i])) pts << num(a.X(s.x[i]), 6) << "," << num(a.Yc(s.y[i]), 6) << " ";
  g.s << "<polyline fill=\"none\" stroke=\"" << hex(s.colour) << "\" stroke-width=\"" << num(width, 3) << "\""
      << (s.dashed ? " stroke-dasharray=\"5,3\"" : "") << " points=\"" << pts.str() << "\"/>\n";
}

// One panel of a plot: its axes from the data (or the spec's bounds), grid and ticks, the
// series as polylines or bars, the frame and the axis titles.
void plot_panel(Svg& g, const PlotSpec& p, double x0, double y0, double pw, double ph, double mb) {
  const PanelAxes a = panel_axes(p, x0, y0, pw, ph);
  panel_grid(g, p, a);
  // Bar series side by side: the n of them share 0.8 of the spacing of x, each 0.8/n wide.
  double dx = 1;
  int bars = 0;
  for (const auto& s : p.series)
    if (s.bars) {
      ++bars;
      for (size_t i = 1; i < s.x.size(); ++i)
        if (s.x[i] != s.x[i - 1]) dx = std::min(dx, std::abs(s.x[i] - s.x[i - 1]));
    }
  const double group = 0.8 * dx / (a.xh - a.xl) * pw, bw = std::max(0.5, group / std::max(1, bars));
  // A line that later lines cover point for point (runs that measure the same: random models'
  // effective rank of 1) is drawn wider by 2.4 for each, so that its colour shows around them.
  const auto covers = [&](const Series& u, const Series& v) {
    if (u.bars || v.bars || u.points || v.points || v.dashed || u.x != v.x || u.y.size() != v.y.size()) return false;
    for (size_t i = 0; i < u.y.size(); ++i)
      if (std::isfinite(u.y[i]) != std::isfinite(v.y[i]) || std::abs(u.y[i] - v.y[i]) > 0.004 * (a.yh - a.yl)) return false;
    return true;
  };
  int bar_k = 0;
  for (size_t k = 0; k < p.series.size(); ++k) {
    const Series& s = p.series[k];
    int covered = 0;
    for (size_t j = k + 1; j < p.series.size(); ++j) covered += covers(s, p.series[j]);
    if (s.bars)
      bar_series(g, s, a, (bar_k++ - 0.5 * (bars - 1)) * group / bars, bw);
    else
      line_series(g, s, a, 1.6 + 2.4 * covered);
  }
  g.rect(x0, y0, pw, ph, "none", " stroke=\"#333\" stroke-width=\"0.8\"");
  if (!p.x_label.empty()) g.text(x0 + pw / 2, y0 + ph + mb - 8, p.x_label, 11, "middle");
  if (!p.y_label.empty()) g.text(x0 - 46, y0 + ph / 2, p.y_label, 11, "middle", -90);
}

// Each distinct series name once (of the panels that show a legend).
std::vector<const Series*> legend_series(const std::vector<PlotSpec>& panels) {
  std::vector<const Series*> legend;
  for (const auto& p : panels)
    if (p.legend)
      for (const auto& s : p.series)
        if (!s.name.empty() && std::none_of(legend.begin(), legend.end(), [&](const Series* x) { return x->name == s.name; }))
          legend.push_back(&s);
  return legend;
}

}  // namespace

Figure plot_figure(const std::vector<PlotSpec>& panels, int columns, double pw, double ph, const std::string& title,
                   const std::string& subtitle) {
  columns = std::max(1, std::min(columns, int(panels.size())));
  const int rows = int((panels.size() + size_t(columns) - 1) / size_t(columns));
  // The legend: each distinct series name once, on the right.
  const std::vector<const Series*> legend = legend_series(panels);
  double legend_w = 0;
  for (const auto* s : legend) legend_w = std::max(legend_w, 34 + text_width(s->name, 11));
  bool any_ticks = false;
  double tick_h = 0;
  for (const auto& p : panels)
    for (const auto& t : p.x_ticks) any_ticks = true, tick_h = std::max(tick_h, text_width(t, 9));
  const double ml = 62, mr = 14, mt = 24, mb = 40 + (any_ticks ? tick_h : 0);
  const double top0 = subtitle.empty() ? 36 : 52;
  const double cw = ml + pw + mr, ch = mt + ph + mb;
  const int W = int(std::ceil(std::max(columns * cw + (legend.empty() ? 0 : legend_w + 16) + 10, text_width(title, 15) + 24)));
  const int Hh = int(std::ceil(std::max(top0 + rows * ch, top0 + 18.0 * double(legend.size()) + 20)));
  Svg g;
  titles(g, title, subtitle);
  Figure f;
  for (size_t k = 0; k < panels.size(); ++k) {
    const double x0 = double(k % size_t(columns)) * cw + ml, y0 = top0 + double(k / size_t(columns)) * ch + mt;
    f.panels.push_back({x0, y0, pw, ph, 0, 0});
    plot_panel(g, panels[k], x0, y0, pw, ph, mb);
  }
  double ly = top0 + 30;
  const double lx = columns * cw + 12;
  for (const auto* s : legend) {
    if (s->bars)
      g.rect(lx, ly - 9, 24, 10, hex(s->colour));
    else
      g.line(lx, ly - 4, lx + 24, ly - 4, hex(s->colour), 2, s->dashed ? " stroke-dasharray=\"5,3\"" : "");
    g.text(lx + 30, ly, s->name, 11);
    ly += 18;
  }
  f.width = W;
  f.height = Hh;
  f.svg = open_svg(W, Hh, title) + g.s.str() + "</svg>\n";
  return f;
}

#ifndef CTXSIM_NO_FIGURES
namespace {

// Owners of the librsvg and cairo handles (each freed on every path out).
struct GErrorFree {
  void operator()(GError* e) const { g_error_free(e); }
};
struct GObjectUnref {
  void operator()(RsvgHandle* h) const { g_object_unref(h); }
};
struct SurfaceDestroy {
  void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct CairoDestroy {
  void operator()(cairo_t* c) const { cairo_destroy(c); }
};
using GErrorPtr = std::unique_ptr<GError, GErrorFree>;

cairo_status_t append_png_bytes(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

}  // namespace

void svg_to_png(const std::string& svg, const std::string& path) {
  GError* raw = nullptr;
  const std::unique_ptr<RsvgHandle, GObjectUnref> handle(
      rsvg_handle_new_from_data(reinterpret_cast<const guint8*>(svg.data()), svg.size(), &raw));
  GErrorPtr err(raw);
  CTXSIM_CHECK(handle, "librsvg cannot read a figure's SVG (" + path + "): " + std::string(err ? err->message : "unknown"));
  gdouble w = 0, h = 0;
  if (!rsvg_handle_get_intrinsic_size_in_pixels(handle.get(), &w, &h)) w = h = 0;
  const std::unique_ptr<cairo_surface_t, SurfaceDestroy> surface(
      cairo_image_surface_create(CAIRO_FORMAT_ARGB32, int(std::ceil(w)), int(std::ceil(h))));
  if (cairo_surface_status(surface.get()) != CAIRO_STATUS_SUCCESS)
    throw Error(path, std::string("cannot make the image: ") + cairo_status_to_string(cairo_surface_status(surface.get())),
                "check free memory");
  {
    const std::unique_ptr<cairo_t, CairoDestroy> cr(cairo_create(surface.get()));
    const RsvgRectangle viewport{0, 0, w, h};
    raw = nullptr;
    const bool ok = rsvg_handle_render_document(handle.get(), cr.get(), &viewport, &raw);
    err.reset(raw);
    CTXSIM_CHECK(ok && cairo_status(cr.get()) == CAIRO_STATUS_SUCCESS,
                 "librsvg cannot render a figure (" + path +
                     "): " + std::string(err ? err->message : cairo_status_to_string(cairo_status(cr.get()))));
  }
  std::string png;
  const cairo_status_t st = cairo_surface_write_to_png_stream(surface.get(), append_png_bytes, &png);
  if (st != CAIRO_STATUS_SUCCESS)
    throw Error(path, std::string("cannot encode the PNG: ") + cairo_status_to_string(st), "check free memory");
  atomic_write(path, png);
}
#else
void svg_to_png(const std::string&, const std::string& path) { require_figures(path); }
#endif

void write_figure(const Figure& figure, const std::string& dir, const std::string& stem) {
  atomic_write(dir + "/" + stem + ".svg", figure.svg);
  svg_to_png(figure.svg, dir + "/" + stem + ".png");
}

}  // namespace ctxsim
