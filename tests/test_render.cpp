// Figures: pixel-level checks of PNG heatmaps from known patterns, SVG labels, pooling, and
// attention rollout on hand-computed two-layer cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "stages/base/digest.h"
#include "stages/figures/figure.h"
#include "stages/figures/render.h"
#include "stages/stats/rollout.h"
#include "test_helpers.h"

namespace ctxsim {
namespace {

TEST(Render, DiagonalMatrixLightsExactlyTheDiagonal) {
  test::TempDir dir;
  const int n = 6, cell = 3;
  std::vector<float> eye(size_t(n * n), 0.0f);
  for (int i = 0; i < n; ++i) eye[size_t(i * n + i)] = 1.0f;
  const std::string p = (dir.path / "eye.png").string();
  write_png(p, heatmap(eye, n, n, 0.0, 1.0, ColourMap::Viridis, cell));
  const Image img = read_png(p);
  ASSERT_EQ(img.width, n * cell);
  ASSERT_EQ(img.height, n * cell);
  const Rgb on = colour(ColourMap::Viridis, 1.0), off = colour(ColourMap::Viridis, 0.0);
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) EXPECT_EQ(img.at(x, y), (x / cell == y / cell ? on : off)) << x << "," << y;
}

TEST(Render, ZeroMapsToTheColourMapsZeroColour) {
  const Image seq = heatmap(std::vector<float>(4, 0.0f), 2, 2, 0.0, 1.0, ColourMap::Viridis);
  EXPECT_EQ(seq.at(1, 1), (Rgb{68, 1, 84}));  // viridis' darkest purple
  const Image div = heatmap(std::vector<float>(4, 0.0f), 2, 2, -3.0, 3.0, ColourMap::Diverging);
  EXPECT_EQ(div.at(0, 0), (Rgb{255, 255, 255}));                                          // signed similarity: 0 is white
  EXPECT_GT(colour(ColourMap::Diverging, 1.0)[0], colour(ColourMap::Diverging, 1.0)[2]);  // positive = red
  EXPECT_LT(colour(ColourMap::Diverging, 0.0)[0], colour(ColourMap::Diverging, 0.0)[2]);  // negative = blue
}

double distance(Rgb a, Rgb b) {
  double d = 0;
  for (int c = 0; c < 3; ++c) d += (double(a[c]) - b[c]) * (double(a[c]) - b[c]);
  return std::sqrt(d);
}

// An all-positive similarity matrix (as a random model gives: every o_i · o_j near 10) with one
// high pair: the symmetric diverging scale painted every cell about the same red; the data's own
// scale puts the pair clearly apart from the rest, and the rest is not one colour either.
TEST(Render, AllPositiveSimilarityShowsItsOneHighPair) {
  const int n = 16;
  std::vector<float> m(size_t(n * n));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) m[size_t(i * n + j)] = i == j ? 0.0f : 10.0f + 0.01f * float((i * 7 + j * 3) % 5);
  m[size_t(3 * n + 9)] = m[size_t(9 * n + 3)] = 12.0f;
  const ValueScale s = similarity_scale(m, n);
  EXPECT_EQ(s.map, ColourMap::Viridis);
  EXPECT_NEAR(s.lo, 10.0, 1e-6);   // the 1st percentile of the off-diagonal values (not the zeroed diagonal)
  EXPECT_NEAR(s.hi, 10.04, 1e-5);  // the 99th: the pair's two cells are the top 0.8%
  const Image img = heatmap(m, n, n, s.lo, s.hi, s.map);
  const Rgb pair = img.at(9, 3), typical = img.at(5, 1), other = img.at(2, 1);  // values 12, 10.02, 10.03
  EXPECT_GT(distance(pair, typical), 120) << "the high pair does not stand out";
  EXPECT_GT(distance(typical, other), 20) << "the rest is one colour";
  // What the old scale (±max, diverging) did: everything a shade of red, the pair barely apart.
  const Image old = heatmap(m, n, n, -12.0, 12.0, ColourMap::Diverging);
  EXPECT_GT(distance(pair, typical), 3 * distance(old.at(9, 3), old.at(5, 1)));
  EXPECT_LT(distance(old.at(5, 1), old.at(2, 1)), 3);
}

TEST(Render, MixedSignSimilarityStaysDivergingAroundZero) {
  const int n = 8;
  std::vector<float> m(size_t(n * n));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) m[size_t(i * n + j)] = i == j ? 0.0f : float((i + j) % 2 ? -(i + j) : (i + j));
  const ValueScale s = similarity_scale(m, n);
  EXPECT_EQ(s.map, ColourMap::Diverging);
  EXPECT_EQ(s.lo, -s.hi);
  EXPECT_EQ(heatmap({0.0f}, 1, 1, s.lo, s.hi, s.map).at(0, 0), (Rgb{255, 255, 255}));
  EXPECT_NE(s.describe().find("0 white"), std::string::npos);
}

TEST(Render, SvgCarriesLabelsTitleAndEscapes) {
  HeatmapSpec m;
  m.values = {0, 1, 1, 0}, m.rows = m.cols = 2, m.row_labels = m.col_labels = {"[CLS]", "a<b"}, m.bar_label = "weight";
  const std::string svg = heatmap_figure(m, "L0 H3 attention", "run x").svg;
  EXPECT_NE(svg.find(">[CLS]</text>"), std::string::npos);
  EXPECT_NE(svg.find(">a&lt;b</text>"), std::string::npos);
  EXPECT_NE(svg.find("<title>L0 H3 attention</title>"), std::string::npos);
  EXPECT_NE(svg.find(">run x</text>"), std::string::npos);
  EXPECT_NE(svg.find(">weight</text>"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
}

// The PNG of a figure is rasterised from its SVG: the cells of a diagonal matrix sit where the
// figure's layout says, in the colour map's colours, for both the vector (small) and the
// embedded-raster (large) forms of a heatmap.
void expect_diagonal_png(int n) {
  test::TempDir dir;
  HeatmapSpec m;
  m.rows = m.cols = n;
  m.values.assign(size_t(n * n), 0.0f);
  for (int i = 0; i < n; ++i) m.values[size_t(i * n + i)] = 1.0f;
  m.cell = n > 64 ? 5 : 9;
  const Figure f = heatmap_figure(m, "identity", "");
  write_figure(f, dir.path.string(), "eye");
  const Image img = read_png((dir.path / "eye.png").string());
  ASSERT_EQ(img.width, f.width);
  ASSERT_EQ(img.height, f.height);
  ASSERT_EQ(f.panels.size(), 1u);
  const PlotArea& p = f.panels[0];
  const Rgb on = colour(ColourMap::Viridis, 1.0), off = colour(ColourMap::Viridis, 0.0);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c) {
      const int x = int(p.x + (c + 0.5) * p.w / n), y = int(p.y + (r + 0.5) * p.h / n);
      const Rgb got = img.at(x, y), want = r == c ? on : off;
      for (int k = 0; k < 3; ++k) ASSERT_NEAR(int(got[size_t(k)]), int(want[size_t(k)]), 2) << "cell " << r << "," << c << " n=" << n;
    }
  EXPECT_NE(f.svg.find(n * n > 4096 ? "<image" : "<rect"), std::string::npos);
}

TEST(Render, FigurePngLightsExactlyTheDiagonal) {
  expect_diagonal_png(7);   // one SVG rect per cell
  expect_diagonal_png(90);  // one embedded raster, scaled without smoothing
}

TEST(Render, ZeroSimilarityFigureIsTheDivergingCentreColour) {
  test::TempDir dir;
  HeatmapSpec m;
  m.rows = m.cols = 5, m.values.assign(25, 0.0f), m.lo = -1, m.hi = 1, m.map = ColourMap::Diverging, m.cell = 10;
  const Figure f = heatmap_figure(m, "zeros", "");
  write_figure(f, dir.path.string(), "z");
  const Image img = read_png((dir.path / "z.png").string());
  const PlotArea& p = f.panels[0];
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < 5; ++c) EXPECT_EQ(img.at(int(p.x + c * 10 + 5), int(p.y + r * 10 + 5)), (Rgb{255, 255, 255}));
}

TEST(Render, LineChartDrawsTheSeriesWhereTheAxesSay) {
  test::TempDir dir;
  PlotSpec p;
  p.x_lo = 0, p.x_hi = 10, p.y_lo = 0, p.y_hi = 1;
  p.series = {Series{"flat", {0, 10}, {0.5, 0.5}, Rgb{255, 0, 0}}};
  const Figure f = plot_figure({p}, 1, 200, 100, "line", "");
  write_figure(f, dir.path.string(), "line");
  const Image img = read_png((dir.path / "line.png").string());
  const PlotArea& a = f.panels[0];
  const Rgb mid = img.at(int(a.x + a.w / 2), int(a.y + a.h / 2));
  EXPECT_GT(int(mid[0]), 200);
  EXPECT_LT(int(mid[1]), 120);
  const Rgb above = img.at(int(a.x + a.w / 2), int(a.y + a.h / 4));  // nothing drawn at y = 0.75
  EXPECT_GT(int(above[1]), 200);
  EXPECT_NE(f.svg.find(">flat</text>"), std::string::npos);  // the legend
}

// The <rect>s of an SVG filled with `fill`, as (x, width), in the order drawn.
std::vector<std::pair<double, double>> rects_of(const std::string& svg, const std::string& fill) {
  std::vector<std::pair<double, double>> out;
  const auto attr = [](const std::string& tag, const std::string& name) {
    const size_t at = tag.find(" " + name + "=\"");
    return at == std::string::npos ? NAN : std::stod(tag.substr(at + name.size() + 3));
  };
  for (size_t at = svg.find("<rect "); at != std::string::npos; at = svg.find("<rect ", at + 1)) {
    const std::string tag = svg.substr(at, svg.find("/>", at) - at);
    if (tag.find("fill=\"" + fill + "\"") != std::string::npos) out.push_back({attr(tag, "x"), attr(tag, "width")});
  }
  return out;
}

// Two bar series over three categories: side by side in each category, each 0.4 of it wide,
// the first on the left, touching nothing of the other (they were drawn 0.8 wide each, on top
// of one another).
TEST(Render, GroupedBarsSitSideBySide) {
  PlotSpec p;
  p.x_ticks = {"a", "b", "c"};
  p.series = {Series{"run 1", {0, 1, 2}, {3, 4, 5}, Rgb{255, 0, 0}, false, true},
              Series{"run 2", {0, 1, 2}, {5, 4, 3}, Rgb{0, 0, 255}, false, true}};
  const Figure f = plot_figure({p}, 1, 300, 100, "bars", "");
  const auto red = rects_of(f.svg, "#ff0000"), blue = rects_of(f.svg, "#0000ff");
  ASSERT_EQ(red.size(), 4u);  // three bars and the legend's swatch
  ASSERT_EQ(blue.size(), 4u);
  const double category = f.panels[0].w / 3;  // x from -0.5 to 2.5
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(red[i].second, 0.4 * category, 1e-3) << i;
    EXPECT_NEAR(blue[i].second, 0.4 * category, 1e-3) << i;
    EXPECT_LE(red[i].first + red[i].second, blue[i].first + 1e-6) << "bars of category " << i << " overlap";
    const double centre = f.panels[0].x + (double(i) + 0.5) * category;  // the pair is centred on its category
    EXPECT_NEAR((red[i].first + blue[i].first + blue[i].second) / 2, centre, 1e-3) << i;
  }
}

// Intervals: a line's band spans lo..hi at each x (in pixels, the band's points are the line's x
// and the bounds' y) and widens the axis to hold them; a bar's is a whisker.
TEST(Render, IntervalsAreBandsUnderLinesAndWhiskersOnBars) {
  PlotSpec p;
  p.y_lo = 0, p.y_hi = 10, p.x_integer = true;
  Series line{"rate", {0, 1, 2}, {4, 5, 6}, Rgb{255, 0, 0}};
  line.lo = {3, 4, 5}, line.hi = {5, 6, 8};
  p.series = {line};
  const Figure f = plot_figure({p}, 1, 300, 100, "bands", "");
  const size_t at = f.svg.find("<polygon class=\"interval\" fill=\"#ff0000\"");
  ASSERT_NE(at, std::string::npos) << f.svg;
  const std::string points =
      f.svg.substr(f.svg.find("points=\"", at) + 8, f.svg.find('"', f.svg.find("points=\"", at) + 8) - f.svg.find("points=\"", at) - 8);
  std::vector<double> xs, ys;
  std::istringstream in(points);
  for (std::string xy; in >> xy;) xs.push_back(std::stod(xy.substr(0, xy.find(',')))), ys.push_back(std::stod(xy.substr(xy.find(',') + 1)));
  ASSERT_EQ(xs.size(), 6u);  // hi at x = 0, 1, 2, then lo back
  const PlotArea& a = f.panels[0];
  const auto Y = [&](double y) { return a.y + a.h - y / 10 * a.h; };
  EXPECT_NEAR(ys[0], Y(5), 1e-3);
  EXPECT_NEAR(ys[2], Y(8), 1e-3);
  EXPECT_NEAR(ys[3], Y(5), 1e-3);  // lo at x = 2
  EXPECT_NEAR(ys[5], Y(3), 1e-3);
  EXPECT_NEAR(xs[0], xs[5], 1e-9);
  // Without a fixed range the axis holds the band's top.
  PlotSpec q;
  Series tall{"rate", {0, 1}, {1, 1}, Rgb{0, 0, 255}};
  tall.lo = {0.5, 0.5}, tall.hi = {2, 9};
  q.series = {tall};
  const std::string svg = plot_figure({q}, 1, 300, 100, "", "").svg;
  EXPECT_NE(svg.find(">8<"), std::string::npos) << "no tick near the band's top (9)";
  // Bars: one whisker (three lines) per bar.
  PlotSpec b;
  Series bars{"run", {0, 1}, {4, 5}, Rgb{0, 128, 0}, false, true};
  bars.lo = {3, 4}, bars.hi = {5, 6};
  b.series = {bars};
  const std::string bsvg = plot_figure({b}, 1, 300, 100, "", "").svg;
  size_t whiskers = 0;
  for (size_t k = bsvg.find("stroke=\"#222\""); k != std::string::npos; k = bsvg.find("stroke=\"#222\"", k + 1)) ++whiskers;
  EXPECT_EQ(whiskers, 6u);
}

void expect_ticks(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size()) << "got " << ::testing::PrintToString(got);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
}

TEST(Render, NiceTicksAreOneTwoFiveStepsAndWholeOnIndexAxes) {
  expect_ticks(nice_ticks(0, 11, 5, true), {0, 2, 4, 6, 8, 10});
  expect_ticks(nice_ticks(0, 5, 5, true), {0, 1, 2, 3, 4, 5});
  expect_ticks(nice_ticks(0, 3, 5, true), {0, 1, 2, 3});  // not 0, 0.5, 1, …: layers are whole
  expect_ticks(nice_ticks(0, 0, 5, true), {0});           // one layer
  expect_ticks(nice_ticks(-0.5, 0.5, 5, true), {0});
  expect_ticks(nice_ticks(1, 1023, 5, true), {200, 400, 600, 800, 1000});
  expect_ticks(nice_ticks(0, 1, 5), {0, 0.2, 0.4, 0.6, 0.8, 1});
  expect_ticks(nice_ticks(0, 3, 5), {0, 0.5, 1, 1.5, 2, 2.5, 3});  // a real-valued axis may have halves
  expect_ticks(nice_ticks(-10, 10, 4), {-10, -5, 0, 5, 10});
  expect_ticks(nice_ticks(0, 0.03, 3), {0, 0.01, 0.02, 0.03});
  expect_ticks(nice_ticks(25, 40, 4), {25, 30, 35, 40});
}

// The x tick labels of a panel: texts 15 px under its plot area.
std::vector<std::string> x_tick_labels(const Figure& f) {
  std::vector<std::string> out;
  const PlotArea& a = f.panels[0];
  char y[32];
  std::snprintf(y, sizeof y, "y=\"%g\"", a.y + a.h + 15);
  for (size_t at = f.svg.find("<text "); at != std::string::npos; at = f.svg.find("<text ", at + 1)) {
    const size_t end = f.svg.find("</text>", at);
    const std::string tag = f.svg.substr(at, end - at);
    if (tag.find(y) != std::string::npos) out.push_back(tag.substr(tag.find('>') + 1));
  }
  return out;
}

TEST(Render, LayerAxesHaveWholeTicks) {
  PlotSpec p;
  p.x_label = "layer", p.x_integer = true;
  p.series = {Series{"rate", index_axis(4), {10, 20, 30, 40}}};
  EXPECT_EQ(x_tick_labels(plot_figure({p}, 1, 300, 200, "four layers", "")), (std::vector<std::string>{"0", "1", "2", "3"}));
  p.series = {Series{"rate", index_axis(1), {10}}};
  EXPECT_EQ(x_tick_labels(plot_figure({p}, 1, 300, 200, "one layer", "")), (std::vector<std::string>{"0"}));
  p.series = {Series{"rate", index_axis(12), std::vector<double>(12, 10.0)}};
  EXPECT_EQ(x_tick_labels(plot_figure({p}, 1, 300, 200, "twelve layers", "")), (std::vector<std::string>{"0", "2", "4", "6", "8", "10"}));
}

// A rate around its chance: the chance is white, the farther side saturates (40, 10 above
// chance: full red), the nearer keeps the same slope (25, 5 below: a quarter of the way to
// blue), and the colour bar shows the data's range, not 0-100.
TEST(Render, HeatmapDivergesAroundItsCentre) {
  HeatmapSpec m;
  m.rows = 1, m.cols = 3, m.values = {25, 30, 40}, m.lo = 25, m.hi = 40, m.centre = 30, m.map = ColourMap::Diverging;
  const Figure f = heatmap_figure(m, "same sentence", "");
  const auto hex = [](Rgb c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c[0], c[1], c[2]);
    return std::string(buf);
  };
  std::vector<std::string> cells;  // the fills of the first three rects: the cells, drawn first
  for (size_t at = f.svg.find("<rect x="); at != std::string::npos && cells.size() < 3; at = f.svg.find("<rect x=", at + 1)) {
    const size_t fill = f.svg.find("fill=\"", at) + 6;
    cells.push_back(f.svg.substr(fill, f.svg.find('"', fill) - fill));
  }
  EXPECT_EQ(cells, (std::vector<std::string>{hex(colour(ColourMap::Diverging, 0.25)), "#ffffff", hex(colour(ColourMap::Diverging, 1.0))}));
  EXPECT_NE(f.svg.find(">40</text>"), std::string::npos);
  EXPECT_EQ(f.svg.find(">100</text>"), std::string::npos);
  EXPECT_EQ(f.svg.find(">0</text>"), std::string::npos);
}

TEST(Render, Base64MatchesRfc4648) {
  EXPECT_EQ(base64(""), "");
  EXPECT_EQ(base64("f"), "Zg==");
  EXPECT_EQ(base64("fo"), "Zm8=");
  EXPECT_EQ(base64("foo"), "Zm9v");
  EXPECT_EQ(base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64(std::string("\xff\xfe", 2)), "//4=");
}

TEST(Render, BlockPoolingAverages) {
  int r = 0, c = 0;
  const auto p = pool_blocks({1, 3, 5, 7, 2, 4, 6, 8, 0, 0, 0, 0, 0, 0, 0, 4}, 4, 4, 2, r, c);
  ASSERT_EQ(r, 2);
  ASSERT_EQ(c, 2);
  EXPECT_EQ(p, (std::vector<float>{2.5f, 6.5f, 0.0f, 1.0f}));
}

TEST(Rollout, HandComputedTwoLayers) {
  // T = 2, one head. Layer 0: A = [[1,0],[1,0]]; layer 1: A = [[0,1],[0,1]].
  // Â_0 = rownorm(A + I) = [[1,0],[.5,.5]]; Â_1 = [[.5,.5],[0,1]].
  // R = Â_1 Â_0 = [[.75,.25],[.5,.5]].
  const std::vector<float> a = {1, 0, 1, 0, 0, 1, 0, 1};
  const auto r = attention_rollout(a, 2, 1, 2, 2);
  EXPECT_DOUBLE_EQ(r[0], 0.75);
  EXPECT_DOUBLE_EQ(r[1], 0.25);
  EXPECT_DOUBLE_EQ(r[2], 0.5);
  EXPECT_DOUBLE_EQ(r[3], 0.5);
  EXPECT_EQ(rollout_row(r, 2, 0), (std::vector<double>{0.75, 0.25}));
  const std::vector<double> last = rollout_row(r, 2, 1);
  EXPECT_EQ(last, (std::vector<double>(r.begin() + 2, r.end())));
}

TEST(Rollout, HeadsAreAveragedAndPaddingIgnored) {
  // T = 3 with 2 valid positions, two heads per layer, one layer: mean of [[1,0],[0,1]] and
  // [[0,1],[1,0]] is all 0.5; + I and renormalised: [[.75,.25],[.25,.75]].
  std::vector<float> a(2 * 3 * 3, 9.0f);  // [PAD] entries hold junk that must not count
  const auto put = [&](int h, int i, int j, float v) { a[size_t((h * 3 + i) * 3 + j)] = v; };
  put(0, 0, 0, 1);
  put(0, 0, 1, 0);
  put(0, 1, 0, 0);
  put(0, 1, 1, 1);
  put(1, 0, 0, 0);
  put(1, 0, 1, 1);
  put(1, 1, 0, 1);
  put(1, 1, 1, 0);
  const auto r = attention_rollout(a, 1, 2, 3, 2);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_DOUBLE_EQ(r[0], 0.75);
  EXPECT_DOUBLE_EQ(r[1], 0.25);
  EXPECT_DOUBLE_EQ(r[3], 0.75);
  // Rows of a rollout sum to 1.
  EXPECT_DOUBLE_EQ(r[2] + r[3], 1.0);
}

}  // namespace
}  // namespace ctxsim
