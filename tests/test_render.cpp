// Figures: pixel-level checks of PNG heatmaps from known patterns, SVG labels, pooling, and
// attention rollout on hand-computed two-layer cases.
#include <gtest/gtest.h>

#include "stages/render.h"
#include "stages/rollout.h"
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
  EXPECT_EQ(div.at(0, 0), (Rgb{255, 255, 255}));  // signed similarity: 0 is white
  EXPECT_GT(colour(ColourMap::Diverging, 1.0)[0], colour(ColourMap::Diverging, 1.0)[2]);  // positive = red
  EXPECT_LT(colour(ColourMap::Diverging, 0.0)[0], colour(ColourMap::Diverging, 0.0)[2]);  // negative = blue
}

TEST(Render, SvgCarriesLabelsTitleAndEscapes) {
  const std::string svg = heatmap_svg({0, 1, 1, 0}, 2, 2, 0, 1, ColourMap::Viridis, {"[CLS]", "a<b"}, "L0 H3 attention");
  EXPECT_NE(svg.find(">[CLS]</text>"), std::string::npos);
  EXPECT_NE(svg.find(">a&lt;b</text>"), std::string::npos);
  EXPECT_NE(svg.find("<title>L0 H3 attention</title>"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
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
  EXPECT_EQ(cls_relevance(r, 2), (std::vector<double>{0.75, 0.25}));
}

TEST(Rollout, HeadsAreAveragedAndPaddingIgnored) {
  // T = 3 with 2 valid positions, two heads per layer, one layer: mean of [[1,0],[0,1]] and
  // [[0,1],[1,0]] is all 0.5; + I and renormalised: [[.75,.25],[.25,.75]].
  std::vector<float> a(2 * 3 * 3, 9.0f);  // [PAD] entries hold junk that must not count
  const auto put = [&](int h, int i, int j, float v) { a[size_t((h * 3 + i) * 3 + j)] = v; };
  put(0, 0, 0, 1); put(0, 0, 1, 0); put(0, 1, 0, 0); put(0, 1, 1, 1);
  put(1, 0, 0, 0); put(1, 0, 1, 1); put(1, 1, 0, 1); put(1, 1, 1, 0);
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
