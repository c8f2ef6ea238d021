// `ctxsim report STORE [--out DIR]`: the study's figures (SVG described once, PNG rasterised
// from it) and one self-contained report.html (no network: images and data are embedded) with
// an explorer of the stored examples: attention, context similarity and attention rollout per
// layer and head, a layer x head "model view", overlays and per-token relevance bars.
//
// Everything is read and checked before anything is written; figures go to a staging folder
// that replaces figures/ only when the whole report succeeded, and report.html is renamed into
// place last, so a failed report never leaves a partial one looking complete.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "pipeline/commands/commands.h"
#include "pipeline/commands/head_list.h"
#include "report_explorer.h"  // generated: kExplorerJs, from pipeline/report/explorer.js
#include "pipeline/job/comm.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/commands/commands.h"
#include "pipeline/store/store.h"
#include "pipeline/store/store_reader.h"
#include "stages/error.h"
#include "stages/figure.h"
#include "stages/files.h"
#include "stages/render.h"
#include "stages/rollout.h"
#include "stages/safetensors.h"

namespace fs = std::filesystem;

namespace ctxsim {
namespace {

std::string json_str(const std::string& s) { return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string fixed(double v, int digits) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(digits);
  o << v;
  return o.str();
}

// Slice `index` along the first dimension (and `index2` along the second when >= 0).
template <class T>
std::vector<T> read_slice(hid_t file, const std::string& path, hid_t mem_type, hsize_t index, long long index2 = -1) {
  const h5::Id ds(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose, path.c_str());
  auto dims = h5::dims_of(ds);
  std::vector<hsize_t> start(dims.size(), 0), count = dims;
  start[0] = index, count[0] = 1;
  if (index2 >= 0) start[1] = hsize_t(index2), count[1] = 1;
  size_t n = 1;
  for (auto c : count) n *= size_t(c);
  std::vector<T> out(n);
  const h5::Id fspace(H5Dget_space(ds), H5Sclose, "H5Dget_space");
  CTXSIM_H5(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr));
  // A memory space of the selection's own shape lets HDF5 copy whole rows (a flat one makes
  // it walk the selection element by element).
  const h5::Id mspace(H5Screate_simple(int(count.size()), count.data(), nullptr), H5Sclose, "H5Screate_simple");
  CTXSIM_H5(H5Dread(ds, mem_type, mspace, fspace, H5P_DEFAULT, out.data()));
  return out;
}

// The float16 example matrices: read as stored and widened here (HDF5's own float16 -> float
// conversion goes bit by bit, ~10x slower).
std::vector<float> read_half_slice(hid_t file, const std::string& path, hsize_t index) {
  const h5::Id f16 = h5::float16_type();
  const auto raw = read_slice<uint16_t>(file, path, f16, index);
  std::vector<float> out(raw.size());
  std::transform(raw.begin(), raw.end(), out.begin(), half_to_float);
  return out;
}

// Everything the report shows, read and checked up front.
struct StoreData {
  std::string store, run, rule;
  int L = 0, H = 0, T = 0, R = 0, rule_index = 0;
  double beta = 0.1;
  Baseline base;
  RuleStats stats;
  std::vector<std::string> vocab;
  std::vector<int64_t> example_ids;
  std::vector<int32_t> tokens;
  std::vector<int16_t> n_valid;
};

StoreData load(hid_t file, const std::string& store, const std::string& rule) {
  StoreData d;
  d.store = store;
  for (const char* group : {"stats", "stats/baseline", "samples", "examples", "vocab"})
    if (!h5::exists(file, group)) throw Error(store, std::string("missing group /") + group, kDamagedStoreFix);
  const h5::Id stats = h5::open_group(file, "stats");
  const std::vector<std::string> rules = store_rules(stats);
  if (rules.empty()) throw Error(store, "/stats lists no selection rule", kDamagedStoreFix);
  d.rule = rule.empty() ? rules[0] : rule;
  if (std::find(rules.begin(), rules.end(), d.rule) == rules.end()) {
    throw Error("--rule " + rule, "the store has no such selection rule", "pick one of: " + join(rules));
  }
  d.rule_index = int(std::find(rules.begin(), rules.end(), d.rule) - rules.begin());
  d.R = int(rules.size());
  d.vocab = store_vocab(file);
  d.base = read_baseline(file, store);
  d.stats = read_rule_stats(file, store, d.rule, d.base, int64_t(d.vocab.size()));
  d.L = int(d.stats.L), d.H = int(d.stats.H), d.T = int(d.stats.T);
  const long long L = d.L, H = d.H, T = d.T;
  std::vector<hsize_t> dims;
  // The rule's own attention threshold (a folded sweep names it), else the run's.
  const size_t b = d.rule.find(",beta=");
  if (b != std::string::npos) d.beta = std::stod(d.rule.substr(b + 6));
  else if (h5::exists(file, "stats/attention")) d.beta = h5::get_attr_double(h5::open_group(file, "stats/attention"), "attention_threshold");
  std::vector<hsize_t> sdims;
  d.tokens = read_checked<int32_t>(file, store, "samples/token_ids", H5T_NATIVE_INT32, {-1, T}, &sdims);
  d.n_valid = read_checked<int16_t>(file, store, "samples/n_valid", H5T_NATIVE_INT16, {(long long)sdims[0]});
  d.example_ids = read_checked<int64_t>(file, store, "examples/sample_ids", H5T_NATIVE_INT64, {-1}, &dims);
  const long long E = (long long)dims[0];
  for (auto id : d.example_ids)
    if (id < 0 || hsize_t(id) >= sdims[0]) throw Error(store, "/examples/sample_ids names sample " + std::to_string(id) + ", not in /samples", kDamagedStoreFix);
  if (E > 0) {
    for (const char* name : {"examples/attention", "examples/similarity"}) {
      if (!h5::exists(file, name)) throw Error(store, std::string("missing dataset /") + name, kDamagedStoreFix);
      const auto ed = h5::dims_of(h5::Id(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose, name));
      if (ed != std::vector<hsize_t>{hsize_t(E), hsize_t(L), hsize_t(H), hsize_t(T), hsize_t(T)})
        throw Error(store, std::string("/") + name + " does not have shape [E,L,H,T,T] = [" + std::to_string(E) + "," + std::to_string(L) + "," +
                               std::to_string(H) + "," + std::to_string(T) + "," + std::to_string(T) + "]", kDamagedStoreFix);
    }
    if (!h5::exists(file, "examples/selected")) throw Error(store, "missing dataset /examples/selected", kDamagedStoreFix);
  }
  d.run = fs::path(store).parent_path().filename().string();
  if (d.run.empty()) d.run = store;
  d.run = "run " + d.run + " · model " + fs::path(h5::get_attr_string(file, "model_path")).filename().string() + " · " + d.rule + " · " +
          std::to_string(d.base.samples) + " samples";
  return d;
}

// The (layer, head) pairs drawn as figures per example: "L:H" strings, or 0, L/2, L-1 at head 0.
std::vector<std::pair<int, int>> parse_heads(const std::vector<std::string>& given, const StoreData& d) {
  HeadList list = parse_head_list(given);
  if (given.empty())
    for (int64_t l : {int64_t(0), int64_t(d.L / 2), int64_t(d.L - 1)})
      if (std::find(list.begin(), list.end(), std::make_pair(l, int64_t(0))) == list.end()) list.emplace_back(l, 0);
  check_head_list(list, d.L, d.H);
  std::vector<std::pair<int, int>> out;
  for (const auto& [l, h] : list) out.emplace_back(int(l), int(h));
  return out;
}

struct Entry {
  std::string stem, caption;
  Figure figure;
};

std::vector<std::string> numbered(const std::string& prefix, int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}

std::vector<double> range(int lo, int hi) {
  std::vector<double> v;
  for (int i = lo; i < hi; ++i) v.push_back(i);
  return v;
}

const Rgb kChance{0, 0, 0}, kBlue{31, 119, 180}, kOrange{230, 120, 20}, kGrey{120, 120, 120};

// The study's aggregate figures.
void aggregate_figures(const StoreData& d, std::vector<Entry>& out) {
  const int L = d.L, H = d.H, T = d.T;
  const Baseline& b = d.base;
  const RuleStats& r = d.stats;
  std::vector<Counts> layers;
  for (int l = 0; l < L; ++l) layers.push_back(r.layer(l));
  // A per-(layer, head) quantity as a heatmap figure.
  const auto lh_heatmap = [&](const std::string& stem, const std::string& title, const std::string& bar, const std::function<double(const Counts&)>& f,
                              double hi, const std::string& caption) {
    HeatmapSpec m;
    m.rows = L, m.cols = H, m.lo = 0, m.map = ColourMap::Viridis;
    for (int l = 0; l < L; ++l)
      for (int h = 0; h < H; ++h) m.values.push_back(float(f(r.head(l, h))));
    m.hi = hi > 0 ? hi : std::max(1e-9, double(*std::max_element(m.values.begin(), m.values.end())));
    m.row_labels = numbered("L", L), m.col_labels = numbered("H", H), m.x_label = "head", m.y_label = "layer", m.bar_label = bar;
    m.cell = std::clamp(420.0 / std::max(L, H), 8.0, 36.0);
    out.push_back({stem, caption, heatmap_figure(m, title, d.run)});
  };
  const auto per_layer = [&](const std::string& name, Rgb colour, const std::function<double(const Counts&)>& f) {
    Series s{name, range(0, L), {}, colour};
    for (const auto& c : layers) s.y.push_back(f(c));
    return s;
  };
  const auto flat = [&](const std::string& name, double v, Rgb colour) { return Series{name, range(0, L), std::vector<double>(size_t(L), v), colour, true}; };

  // Distance distribution per layer against chance: one panel per layer, and an overlay.
  std::vector<double> chance;
  for (int x = 1; x < T; ++x) chance.push_back(100.0 * Counts::ratio(double(b.distance_all[size_t(x)]), b.valid_pairs));
  const Series chance_series{"chance (all valid pairs)", range(1, T), chance, kChance, true};
  std::vector<PlotSpec> panels;
  PlotSpec overlay;
  overlay.title = "all layers", overlay.x_label = "distance j - i (tokens)", overlay.y_label = "% of selected pairs";
  double ymax = *std::max_element(chance.begin(), chance.end());
  for (int l = 0; l < L; ++l) {
    Series s{"layer " + std::to_string(l), range(1, T), {}, sequence_colour(l, L)};
    for (int x = 1; x < T; ++x) s.y.push_back(100.0 * Counts::ratio(layers[size_t(l)].distance[size_t(x)], layers[size_t(l)].pairs));
    ymax = std::max(ymax, *std::max_element(s.y.begin(), s.y.end()));
    overlay.series.push_back(s);
    PlotSpec p;
    p.title = "layer " + std::to_string(l), p.x_label = "distance j - i", p.y_label = "% of pairs", p.legend = l == 0;
    s.name = "selected pairs", s.colour = kBlue;
    p.series = {s, chance_series};
    panels.push_back(p);
  }
  overlay.series.push_back(chance_series);
  for (auto& p : panels) p.y_lo = 0, p.y_hi = ymax * 1.05;
  out.push_back({"distance_by_layer", "Distance j - i of the selected (high-similarity) pairs per layer, against the distance distribution of all valid pairs (chance)",
                 plot_figure(panels, 4, 230, 130, "Distance of high-similarity pairs per layer vs chance", d.run)});
  out.push_back({"distance_overlay", "The same distributions overlaid: the shift from long- to short-range pairs across layers",
                 plot_figure({overlay}, 1, 640, 340, "Distance of high-similarity pairs, all layers vs chance", d.run)});

  // Same sentence: per head, and per layer against chance with the lift.
  const std::string ss_chance = fixed(100 * b.same_sentence_chance(), 1) + "%";
  lh_heatmap("same_sentence", "Same-sentence % of high-similarity pairs per head", "% same sentence (chance " + ss_chance + ")",
             [](const Counts& c) { return 100 * c.same_sentence_rate(); }, 100,
             "Share of selected pairs whose tokens are in the same sentence, per layer and head; chance " + ss_chance);
  {
    PlotSpec rate, lift;
    rate.title = "same-sentence %", rate.x_label = "layer", rate.y_label = "% of selected pairs", rate.y_lo = 0, rate.y_hi = 100;
    lift.title = "lift over chance", lift.x_label = "layer", lift.y_label = "rate / chance", lift.y_lo = 0;
    rate.series = {per_layer("selected pairs", kBlue, [](const Counts& c) { return 100 * c.same_sentence_rate(); }),
                   flat("chance", 100 * b.same_sentence_chance(), kChance)};
    lift.series = {per_layer("lift", kOrange, [&](const Counts& c) { return b.same_sentence_lift(c); }), flat("no lift (1)", 1.0, kGrey)};
    out.push_back({"same_sentence_by_layer", "Same-sentence % per layer (all heads pooled) against chance, and the lift (rate / chance)",
                   plot_figure({rate, lift}, 2, 320, 220, "Same-sentence pairs per layer vs chance", d.run)});
  }
  lh_heatmap("repetition_lift", "Repeated-token pairs: rate / chance per head", "lift (chance rate " + fixed(100 * b.repetition_chance(), 2) + "%)",
             [&](const Counts& c) { return b.repetition_lift(c); }, 0,
             "Rate of selected pairs joining two occurrences of the same token, divided by the rate among all valid pairs");
  lh_heatmap("separator_attention", "Attention mass on separators per head", "mean attention on separators",
             [&](const Counts& c) { return b.separator_attention(c); }, 0,
             "Mean attention mass that valid query tokens put on separator keys, per layer and head");
  lh_heatmap("noise_share", "Noise: % of high-similarity pairs no explanation covers", "% noise", [](const Counts& c) { return 100 * c.noise_share(); }, 100,
             "Share of selected pairs that are neither same-sentence, nor repeated tokens, nor touch the head's anchor token");

  {
    // Distinct anchors per layer (head specialisation) and signal / noise / attention overlap per layer.
    PlotSpec p;
    p.title = "distinct anchors across heads", p.x_label = "layer", p.y_label = "mean per sample", p.y_lo = 0, p.y_hi = H * 1.05, p.x_ticks = numbered("L", L);
    Series bars{"distinct anchors", range(0, L), {}, kBlue, false, true};
    for (int l = 0; l < L; ++l) bars.y.push_back(Counts::ratio(double(r.distinct_anchors[size_t(l)]), double(b.samples)));
    p.series = {bars, Series{"all heads different (" + std::to_string(H) + ")", {-0.5, L - 0.5}, {double(H), double(H)}, kGrey, true}};
    out.push_back({"distinct_anchors", "Mean number of distinct anchor tokens among the heads of a layer, per sample (head specialisation)",
                   plot_figure({p}, 1, std::max(300.0, 36.0 * L), 240, "Distinct anchors per layer", d.run)});
    Counts all;
    for (const auto& c : layers) all.high_attention_all += c.high_attention_all, all.heads += c.heads;
    PlotSpec sn, att;
    sn.title = "signal and noise", sn.x_label = "layer", sn.y_label = "% of selected pairs", sn.y_lo = 0, sn.y_hi = 100;
    att.title = "attention overlap", att.x_label = "layer", att.y_label = "% high-attention", att.y_lo = 0;
    sn.series = {per_layer("signal (some explanation)", kBlue, [](const Counts& c) { return c.pairs > 0 ? 100 * (1 - c.noise_share()) : 0; }),
                 per_layer("noise", kOrange, [](const Counts& c) { return 100 * c.noise_share(); })};
    att.series = {per_layer("selected pairs with attention >= " + fixed(d.beta, 2), Rgb{44, 160, 44}, [](const Counts& c) { return 100 * c.in_attention_rate(); }),
                  flat("chance (all valid pairs)", 100 * b.in_attention_chance(all), kChance)};
    out.push_back({"signal_noise", "Signal (same sentence, repeated token or anchor) and noise per layer; high-attention share of the selected pairs vs chance",
                   plot_figure({sn, att}, 2, 320, 220, "Signal / noise and attention overlap per layer", d.run)});
  }

  {
    // Top anchor per head as a table of decoded tokens, coloured by the share of samples.
    HeatmapSpec m;
    m.rows = L, m.cols = H, m.lo = 0, m.hi = 100, m.cell = std::clamp(760.0 / H, 24.0, 64.0);
    m.values.resize(size_t(L * H));
    m.cell_text.resize(size_t(L * H));
    for (int l = 0; l < L; ++l)
      for (int h = 0; h < H; ++h) {
        const auto top = r.top_anchors(l, h, 1);
        if (top.empty()) continue;
        m.values[size_t(l * H + h)] = float(100.0 * Counts::ratio(double(r.anchor_count(l, h, top[0])), double(b.samples)));
        m.cell_text[size_t(l * H + h)] = d.vocab[size_t(top[0])];
      }
    m.row_labels = numbered("L", L), m.col_labels = numbered("H", H), m.x_label = "head", m.y_label = "layer", m.bar_label = "% of samples with this anchor";
    out.push_back({"top_anchors", "Each head's most frequent anchor (the token most of its selected pairs touch), coloured by the share of samples where it is the anchor",
                   heatmap_figure(m, "Top anchor token per head", d.run)});
  }
}

// Pairs (i < j) of an n x n boolean matrix, pooled to m x m cells (a cell is set when any pair in it is).
std::vector<std::pair<int, int>> cells_of(const std::vector<uint8_t>& mask, int n, int block) {
  std::vector<std::pair<int, int>> out;
  const int m = (n + block - 1) / block;
  std::vector<uint8_t> seen(size_t(m) * size_t(m), 0);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (mask[size_t(i) * size_t(n) + size_t(j)] && !seen[size_t(i / block) * size_t(m) + size_t(j / block)]) {
        seen[size_t(i / block) * size_t(m) + size_t(j / block)] = 1;
        out.emplace_back(i / block, j / block);
      }
  return out;
}

std::string bits_base64(const std::vector<std::pair<int, int>>& cells, int m) {
  std::string bytes((size_t(m) * size_t(m) + 7) / 8, '\0');
  for (const auto& [r, c] : cells) {
    const size_t k = size_t(r) * size_t(m) + size_t(c);
    bytes[k / 8] = char(uint8_t(bytes[k / 8]) | uint8_t(1u << (k % 8)));
  }
  return base64(bytes);
}

std::string quantised_base64(const std::vector<float>& v, double lo, double hi) {
  std::string bytes(v.size(), '\0');
  const double span = hi > lo ? hi - lo : 1.0;
  for (size_t k = 0; k < v.size(); ++k) bytes[k] = char(uint8_t(std::lround(std::clamp((double(v[k]) - lo) / span, 0.0, 1.0) * 255)));
  return base64(bytes);
}

// One stored example as read from the store: every head's matrices, [L, H, T, T], of which
// the first n positions are the sample's valid tokens.
struct Example {
  int64_t id = 0;
  int n = 0, H = 0, T = 0;
  std::vector<std::string> labels;  // the n decoded tokens
  std::vector<float> attention, similarity;
  std::vector<uint8_t> selected;    // of the report's rule

  // Head (l, h) of one of the [L, H, T, T] arrays, as an n x n matrix.
  template <class V>
  V head(const V& all, int l, int h) const {
    V v(size_t(n) * size_t(n));
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) v[size_t(i * n + j)] = all[((size_t(l) * size_t(H) + size_t(h)) * size_t(T) + size_t(i)) * size_t(T) + size_t(j)];
    return v;
  }
};

Example load_example(hid_t file, const StoreData& d, size_t e) {
  Example x;
  x.id = d.example_ids[e];
  x.n = d.n_valid[size_t(x.id)], x.H = d.H, x.T = d.T;
  for (int i = 0; i < x.n; ++i) {
    const int32_t t = d.tokens[size_t(x.id) * size_t(d.T) + size_t(i)];
    x.labels.push_back(t >= 0 && size_t(t) < d.vocab.size() ? d.vocab[size_t(t)] : "?");
  }
  x.attention = read_half_slice(file, "examples/attention", e);
  x.similarity = read_half_slice(file, "examples/similarity", e);
  x.selected = read_slice<uint8_t>(file, "examples/selected", H5T_NATIVE_UINT8, e, d.rule_index);
  return x;
}

// Pairs i < j that are high-attention, max(A_ij, A_ji) >= beta, of an n x n attention matrix.
std::vector<uint8_t> high_attention(const std::vector<float>& a, int n, double beta) {
  std::vector<uint8_t> v(size_t(n) * size_t(n));
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) v[size_t(i * n + j)] = std::max(a[size_t(i * n + j)], a[size_t(j * n + i)]) >= beta;
  return v;
}

// Mean pooling of an n x n matrix in block x block cells (none when block is 1).
std::vector<float> pooled(const std::vector<float>& v, int n, int block) {
  if (block == 1) return v;
  int r = 0, c = 0;
  return pool_blocks(v, n, n, block, r, c);
}

// The coarsest pooling figures and explorer always use: at most 256 cells a side.
int legible_block(int n) { return std::max(1, (n + 255) / 256); }

// An example's static figures: attention and similarity of the chosen heads with the selected
// and high-attention pairs overlaid, the rollout, and the [CLS] relevance bars.
void example_figures(const StoreData& d, const Example& x, size_t e, const std::vector<double>& roll,
                     const std::vector<std::pair<int, int>>& heads, std::vector<Entry>& figures) {
  const int n = x.n, block = legible_block(n), m = (n + block - 1) / block;
  std::vector<std::string> plabels;
  for (int i = 0; i < n; i += block) plabels.push_back(block > 1 ? x.labels[size_t(i)] + "…" : x.labels[size_t(i)]);
  const std::string pool_note = block > 1 ? " · block-pooled " + std::to_string(block) + "x" + std::to_string(block) + " (mean) to stay legible" : "";
  const std::string sample = "sample " + std::to_string(x.id) + " (" + std::to_string(n) + " tokens)";
  const Overlay::Shape outline = Overlay::Shape::Outline, dot = Overlay::Shape::Dot;
  for (const auto& [l, hd] : heads) {
    const std::string lh = "layer " + std::to_string(l) + " head " + std::to_string(hd);
    const std::string stem = "example" + std::to_string(e) + "_L" + std::to_string(l) + "H" + std::to_string(hd);
    const auto a = x.head(x.attention, l, hd);
    HeatmapSpec hm;
    hm.rows = hm.cols = m, hm.row_labels = hm.col_labels = plabels, hm.x_label = "key j", hm.y_label = "query i";
    hm.overlays = {Overlay{"selected pair (" + d.rule + ")", outline, Rgb{255, 255, 255}, cells_of(x.head(x.selected, l, hd), n, block)},
                   Overlay{"attention pair max(A_ij, A_ji) >= " + fixed(d.beta, 2), dot, Rgb{255, 80, 0}, cells_of(high_attention(a, n, d.beta), n, block)}};
    hm.values = pooled(a, n, block), hm.lo = 0, hm.bar_label = "attention weight";
    hm.hi = std::max(1e-9, double(*std::max_element(hm.values.begin(), hm.values.end())));
    figures.push_back({stem + "_attention", "Attention map of " + sample + ", " + lh + ", with the selected pairs and the high-attention pairs (upper triangle)",
                       heatmap_figure(hm, "Attention, " + sample + ", " + lh, d.run + pool_note)});
    hm.values = pooled(x.head(x.similarity, l, hd), n, block);
    double sm = 1e-9;
    for (float v : hm.values) sm = std::max(sm, double(std::abs(v)));
    hm.lo = -sm, hm.hi = sm, hm.map = ColourMap::Diverging, hm.bar_label = "context similarity o_i · o_j", hm.x_label = "token j", hm.y_label = "token i";
    hm.overlays[0].colour = Rgb{0, 0, 0};
    figures.push_back({stem + "_similarity", "Context similarity matrix of " + sample + ", " + lh + " (diagonal zeroed), with the same overlays",
                       heatmap_figure(hm, "Context similarity, " + sample + ", " + lh, d.run + pool_note)});
  }
  HeatmapSpec hm;
  hm.rows = hm.cols = m, hm.row_labels = hm.col_labels = plabels, hm.x_label = "input token j", hm.y_label = "position i after the last layer";
  hm.values = pooled(std::vector<float>(roll.begin(), roll.end()), n, block), hm.lo = 0, hm.bar_label = "rollout weight";
  hm.hi = std::max(1e-9, double(*std::max_element(hm.values.begin(), hm.values.end())));
  figures.push_back({"example" + std::to_string(e) + "_rollout",
                     "Attention rollout of " + sample + " (Abnar & Zuidema: heads averaged, identity added, rows renormalised, layers multiplied)",
                     heatmap_figure(hm, "Attention rollout, " + sample, d.run + pool_note)});
  PlotSpec p;
  p.title = "relevance of each input token for [CLS] (rollout row 0)", p.y_label = "rollout weight", p.x_label = "input token", p.y_lo = 0, p.legend = false;
  p.x_ticks = x.labels;
  Series bars{"relevance", range(0, n), {}, kBlue, false, true};
  const auto rel = cls_relevance(roll, n);
  bars.y.assign(rel.begin(), rel.end());
  p.series = {bars};
  figures.push_back({"example" + std::to_string(e) + "_relevance", "Per-token relevance of " + sample + " for the [CLS] position: row 0 of the attention rollout",
                     plot_figure({p}, 1, std::clamp(7.0 * n, 360.0, 1400.0), 200, "Rollout relevance, " + sample, d.run)});
}

// The explorer's data of an example (a JSON object, see explorer.js), pooled coarser
// than legible_block when it would not fit `budget` bytes.
std::string example_data(const StoreData& d, const Example& x, const std::vector<double>& roll, size_t budget) {
  const int L = d.L, H = d.H, n = x.n;
  double att_max = 1e-9, sim_max = 1e-9;
  for (int k = 0; k < L * H; ++k) {
    for (float v : x.head(x.attention, k / H, k % H)) att_max = std::max(att_max, double(v));
    for (float v : x.head(x.similarity, k / H, k % H)) sim_max = std::max(sim_max, double(std::abs(v)));
  }
  const std::vector<float> rollf(roll.begin(), roll.end());
  const double roll_max = std::max(1e-9, double(*std::max_element(rollf.begin(), rollf.end())));
  // Per head: two byte matrices and two bit masks, base64.
  const auto bytes_at = [&](int b) {
    const double m = std::ceil(double(n) / b);
    return 4.0 / 3.0 * double(L * H) * (2 * m * m + m * m / 4) + 8.0 * n;
  };
  int block = legible_block(n);
  while (bytes_at(block) > double(budget) && block < n) ++block;
  const int m = (n + block - 1) / block;
  std::ostringstream js;
  js << "{\"sample\":" << x.id << ",\"n\":" << n << ",\"m\":" << m << ",\"block\":" << block << ",\"tokens\":[";
  for (size_t i = 0; i < x.labels.size(); ++i) js << (i ? "," : "") << json_str(x.labels[i]);
  js << "],\"attMax\":" << att_max << ",\"simMax\":" << sim_max << ",\"rolloutMax\":" << roll_max;
  std::ostringstream a_js, s_js, sel_js, ha_js;
  for (int k = 0; k < L * H; ++k) {
    const auto a = x.head(x.attention, k / H, k % H);
    a_js << (k ? "," : "") << '"' << quantised_base64(pooled(a, n, block), 0, att_max) << '"';
    s_js << (k ? "," : "") << '"' << quantised_base64(pooled(x.head(x.similarity, k / H, k % H), n, block), -sim_max, sim_max) << '"';
    sel_js << (k ? "," : "") << '"' << bits_base64(cells_of(x.head(x.selected, k / H, k % H), n, block), m) << '"';
    ha_js << (k ? "," : "") << '"' << bits_base64(cells_of(high_attention(a, n, d.beta), n, block), m) << '"';
  }
  js << ",\"attention\":[" << a_js.str() << "],\"similarity\":[" << s_js.str() << "],\"selected\":[" << sel_js.str() << "],\"highAttention\":["
     << ha_js.str() << "],\"rollout\":\"" << quantised_base64(pooled(rollf, n, block), 0, roll_max) << "\"}";
  return js.str();
}



}  // namespace

int cmd_report(const std::string& store_path, const ReportArgs& args, std::ostream& out) {
  const std::string& out_arg = args.out_dir;
  const int64_t max_bytes = args.max_bytes;
  MpiSession::ensure();
  const StoreInfo info = inspect_store(store_path);
  if (!info.exists) throw Error(store_path, "no store here", "give the store.h5 that 'ctxsim run' wrote");
  if (!info.complete)
    throw Error(store_path, "the store is not complete (interrupted or still running): no report written", "rerun the job to finish it");
  if (max_bytes < (1 << 20)) throw Error("--max-bytes", std::to_string(max_bytes) + " is too small for a report", "give at least 1048576 (1 MiB)");
  const h5::Id file(H5Fopen(store_path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, ("open " + store_path).c_str());
  const StoreData d = load(file, store_path, args.rule);
  const auto heads = parse_heads(args.heads, d);

  const std::string dir = out_arg.empty() ? fs::path(store_path).parent_path().string() : out_arg;
  fs::create_directories(dir.empty() ? "." : dir);
  const fs::path figs = fs::path(dir) / "figures", staging = fs::path(dir) / "figures.partial";
  fs::remove_all(staging);
  fs::create_directories(staging);
  try {
    std::vector<Entry> figures;
    aggregate_figures(d, figures);
    const size_t E = d.example_ids.size();
    std::vector<std::vector<double>> rollouts(E);
    for (size_t e = 0; e < E; ++e) {
      const Example x = load_example(file, d, e);
      rollouts[e] = attention_rollout(x.attention, d.L, d.H, d.T, x.n);
      example_figures(d, x, e, rollouts[e], heads, figures);
    }

    nlohmann::json index = nlohmann::json::array();
    for (const auto& f : figures) {
      write_figure(f.figure, staging.string(), f.stem);
      nlohmann::json panels = nlohmann::json::array();
      for (const auto& p : f.figure.panels) panels.push_back({{"x", p.x}, {"y", p.y}, {"w", p.w}, {"h", p.h}, {"rows", p.rows}, {"cols", p.cols}});
      index.push_back({{"stem", f.stem}, {"caption", f.caption}, {"width", f.figure.width}, {"height", f.figure.height}, {"panels", panels}});
    }
    atomic_write((staging / "index.json").string(), index.dump(1) + "\n");

    // ------------------------------------------------ report.html ----------------------------
    std::ostringstream summary;
    print_summary(store_path, SummaryOptions{}, summary);
    std::string lut;
    for (int k = 0; k < 256; ++k) {
      const Rgb c = colour(ColourMap::Viridis, k / 255.0), v = colour(ColourMap::Diverging, k / 255.0);
      for (int x : {c[0], c[1], c[2], v[0], v[1], v[2]}) lut += (lut.empty() ? "" : ",") + std::to_string(x);
    }
    std::ostringstream html;
    html << "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>ctxsim report · " << xml_escape(d.run) << "</title><style>"
            "body{font-family:sans-serif;margin:2em auto;max-width:1250px;padding:0 1em;color:#222}img{max-width:100%}"
            "figure{margin:1.5em 0}figcaption{color:#444;font-size:14px}pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:12px}"
            "#explorer canvas{image-rendering:pixelated}#view{max-width:100%;border:1px solid #ccc}#hover{font-family:monospace;min-height:1.5em}"
            "#grid{display:inline-grid;gap:3px;align-items:center;font-size:11px;margin-top:1em}#grid canvas{width:60px;height:60px;cursor:pointer;border:1px solid #ddd}"
            "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left}nav a{margin-right:1em}"
            "</style></head><body>\n<h1>ctxsim report</h1>\n<p><b>"
         << xml_escape(d.run) << "</b><br>store " << xml_escape(store_path) << " · " << d.L << " layers × " << d.H << " heads · " << d.T
         << " tokens per sample · model " << xml_escape(h5::get_attr_string(file, "model_path")) << " · figures use the rule <b>" << xml_escape(d.rule)
         << "</b>" << (d.R > 1 ? " (one of " + std::to_string(d.R) + " in the store: ctxsim report --rule NAME for another)" : "") << "</p>\n"
         << "<nav><a href=\"#explorer\">explorer</a><a href=\"#figures\">figures</a><a href=\"#anchors\">top anchors</a><a href=\"#summary\">summary</a></nav>\n"
         << "<h2>Explorer</h2><div id=\"explorer\"><label>example <select id=\"ex\"></select></label> "
            "<label>layer <select id=\"layer\"></select></label> <label>head <select id=\"head\"></select></label> "
            "<label>quantity <select id=\"qty\"><option>attention</option><option>similarity</option><option>rollout</option></select></label> "
            "<label><input type=\"checkbox\" id=\"ovSel\" checked> selected pairs (outlined)</label> "
            "<label><input type=\"checkbox\" id=\"ovAtt\"> attention &ge; "
         << fixed(d.beta, 2)
         << " (dots)</label><div id=\"note\"></div><canvas id=\"view\" width=\"640\" height=\"640\"></canvas><div id=\"hover\"></div>"
            "<canvas id=\"bars\" width=\"640\" height=\"160\"></canvas><h3>Model view: every layer and head (click one)</h3><div id=\"grid\"></div></div>\n"
            "<h2 id=\"figures\">Figures</h2>\n";
    for (const auto& f : figures)
      html << "<figure id=\"fig-" << f.stem << "\"><img alt=\"" << xml_escape(f.caption) << "\" src=\"data:image/png;base64,"
           << base64(read_file_bytes((staging / (f.stem + ".png")).string())) << "\"><figcaption>" << xml_escape(f.caption)
           << " · <a href=\"figures/" << f.stem << ".svg\">SVG</a> · <a href=\"figures/" << f.stem << ".png\">PNG</a></figcaption></figure>\n";
    // Top anchors per head, decoded.
    html << "<h2 id=\"anchors\">Top anchors per head</h2><p>Anchor: the token that most endpoints of a head's selected pairs are, per sample; "
            "count = samples where it is the anchor.</p><table><tr><th>layer</th><th>head</th><th>top anchors (samples)</th></tr>\n";
    for (int l = 0; l < d.L; ++l)
      for (int h = 0; h < d.H; ++h) {
        html << "<tr><td>" << l << "</td><td>" << h << "</td><td>";
        const auto top = d.stats.top_anchors(l, h, 10);
        for (size_t i = 0; i < top.size(); ++i)
          html << (i ? ", " : "") << "<code>" << xml_escape(d.vocab[size_t(top[i])]) << "</code> (" << d.stats.anchor_count(l, h, top[i]) << ")";
        html << "</td></tr>\n";
      }
    html << "</table>\n<h2 id=\"summary\">Summary</h2><pre>" << xml_escape(summary.str()) << "</pre>\n<script>\n"
         << "const L=" << d.L << ",H=" << d.H << ";const LUT=[" << lut << "];\nconst EX=[";
    // The explorer's data gets what the page and its figures leave of the budget, shared
    // equally by the examples (each pooled coarser until it fits).
    const size_t fixed_part = html.str().size() + std::string(kExplorerJs).size() + 4096;
    if (fixed_part > size_t(max_bytes))
      throw Error(store_path, "the figures alone take " + std::to_string(fixed_part) + " bytes, over the budget of " + std::to_string(max_bytes) + " bytes",
                  "raise --max-bytes (output.report_max_bytes in a run) or store fewer examples (statistics.examples)");
    const size_t per = E ? (size_t(max_bytes) - fixed_part) / E : 0;
    // Examples are read again here rather than held: memory stays one example's worth.
    for (size_t e = 0; e < E; ++e) html << (e ? ",\n" : "") << example_data(d, load_example(file, d, e), rollouts[e], per);
    html << "];\n" << kExplorerJs << "</script></body></html>\n";
    const std::string page = html.str();
    if (page.size() > size_t(max_bytes))
      throw Error(store_path, "report.html would be " + std::to_string(page.size()) + " bytes, over the budget of " + std::to_string(max_bytes) + " bytes",
                  "raise --max-bytes (output.report_max_bytes in a run) or store fewer examples (statistics.examples)");

    // Commit: figures first, the page last.
    const std::string html_path = (fs::path(dir) / "report.html").string();
    fs::remove(html_path);
    fs::remove_all(figs);
    fs::rename(staging, figs);
    atomic_write(html_path, page);
    out << "report: " << html_path << " (" << page.size() / 1024 << " KiB) and " << figures.size() << " figures (PNG + SVG) in " << figs.string() << "\n";
  } catch (...) {
    std::error_code ec;
    fs::remove_all(staging, ec);
    throw;
  }
  return 0;
}

}  // namespace ctxsim
