#include "pipeline/report/report_figures.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "pipeline/report/layer_figures.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/stats/metrics.h"

#include "stages/figures/render.h"
#include "stages/stats/rollout.h"

namespace ctxsim::report {
namespace {

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

const Rgb kChance{0, 0, 0}, kBlue{31, 119, 180};

// What every aggregate figure draws from: the store's data and its per-layer counts.
struct Aggregates {
  const StoreData& d;
  std::vector<Entry>& out;
  std::vector<Counts> layers;
};

// Distance distribution per layer against chance: one panel per layer (the comparison's figure
// of one run), and an overlay.
void distance_figures(const Aggregates& a) {
  const StoreData& d = a.d;
  const int L = d.L, T = d.T;
  const Baseline& b = d.base;
  a.out.push_back(
      {"distance_by_layer",
       "Distance j - i of the selected (high-similarity) pairs per layer, against the distance distribution of all valid pairs (chance)",
       distance_by_layer_figure({LayerRun{"selected pairs", kBlue, &b, &a.layers}}, L, T,
                                "Distance of high-similarity pairs per layer vs chance", d.run)});
  PlotSpec overlay;
  overlay.title = "all layers", overlay.x_label = "distance j - i (tokens)", overlay.y_label = "% of selected pairs";
  overlay.x_integer = true;
  for (int l = 0; l < L; ++l) {
    Series s{"layer " + std::to_string(l), range(1, T), {}, sequence_colour(l, L)};
    for (int x = 1; x < T; ++x) s.y.push_back(100.0 * Counts::ratio(a.layers[size_t(l)].distance[size_t(x)], a.layers[size_t(l)].pairs()));
    overlay.series.push_back(s);
  }
  overlay.series.push_back(Series{"chance (all valid pairs)", range(1, T), distance_chance(b, T), kChance, true});
  a.out.push_back({"distance_overlay", distance_overlay_caption(a.layers, b),
                   plot_figure({overlay}, 1, 640, 340, "Distance of high-similarity pairs, all layers vs chance", d.run)});
}

}  // namespace

std::string distance_overlay_caption(const std::vector<Counts>& layers, const Baseline& b) {
  const std::string what = "The same distributions overlaid, one colour per layer, against chance (dashed)";
  const size_t L = layers.size(), third = std::max<size_t>(1, L / 3);
  const auto short_share = [&](size_t from, size_t to) {  // pooled over the layers [from, to), in percent
    double close = 0, pairs = 0;
    for (size_t l = from; l < to; ++l) close += layers[l].short_range() * layers[l].pairs(), pairs += layers[l].pairs();
    return 100.0 * Counts::ratio(close, pairs);
  };
  if (L == 0) return what;
  const double first = short_share(0, third), last = short_share(L - third, L), chance = 100.0 * b.short_range_chance();
  const std::string numbers = fixed(first, 1) + "% of the selected pairs in the first layers, " + fixed(last, 1) +
                              "% in the last (chance " + fixed(chance, 1) + "%)";
  // A shift is claimed only when the data show one clearly: the last layers well above chance
  // (1.5 times it and 5 points more) and 5 points above the first layers.
  if (last >= 1.5 * chance && last - chance >= 5 && last - first >= 5)
    return what + ": the selected pairs shift to short range across layers; short-range pairs (d <= 5) are " + numbers;
  return what + ": compare each layer's distribution with chance; short-range pairs (d <= 5) are " + numbers;
}

namespace {

// "{chance}" in a heatmap's text: the metric's chance as a percentage.
std::string with_chance(std::string text, const Metric& m, const Baseline& b) {
  const size_t at = text.find("{chance}");
  if (at == std::string::npos || !m.chance) return text;
  return text.replace(at, 8, fixed(metric(m.chance).shown(Counts{}, b), m.heatmap.chance_digits) + "%");
}

// The per-head heatmaps: every row of the metric table with a heatmap view.
void head_maps(const Aggregates& a) {
  const StoreData& d = a.d;
  for (const Metric& metric_row : metrics()) {
    const HeadMap& v = metric_row.heatmap;
    if (!v.stem) continue;
    const HeatmapSpec spec = head_map_spec(d, metric_row);
    if (std::all_of(spec.values.begin(), spec.values.end(), [](float x) { return std::isnan(x); })) continue;  // a store before it
    a.out.push_back({v.stem, with_chance(v.caption, metric_row, d.base), heatmap_figure(spec, v.title, d.run)});
  }
}

// Top anchor per head as a table of decoded tokens, coloured by the share of samples.
void top_anchor_figure(const Aggregates& a) {
  const StoreData& d = a.d;
  const int L = d.L, H = d.H;
  HeatmapSpec m;
  m.rows = L, m.cols = H, m.lo = 0, m.hi = 100, m.cell = std::clamp(760.0 / H, 24.0, 64.0);
  m.values.resize(size_t(L * H));
  m.cell_text.resize(size_t(L * H));
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h) {
      const auto top = d.stats.top_anchors(l, h, 1);
      if (top.empty()) continue;
      m.values[size_t(l * H + h)] = float(100.0 * Counts::ratio(double(d.stats.anchor_count(l, h, top[0])), d.base[Stat::Samples]));
      m.cell_text[size_t(l * H + h)] = token_text(d.vocab, top[0]);
    }
  m.row_labels = numbered("L", L), m.col_labels = numbered("H", H), m.x_label = "head", m.y_label = "layer",
  m.bar_label = "% of samples with this anchor";
  a.out.push_back(
      {"top_anchors",
       "Each head's most frequent anchor (the token most of its selected pairs touch), coloured by the share of samples where it is the anchor",
       heatmap_figure(m, "Top anchor token per head", d.run)});
}

}  // namespace

HeatmapSpec head_map_spec(const StoreData& d, const Metric& row) {
  const HeadMap& v = row.heatmap;
  HeatmapSpec m;
  m.rows = d.L, m.cols = d.H, m.map = ColourMap::Viridis;
  for (int l = 0; l < d.L; ++l)
    for (int h = 0; h < d.H; ++h) m.values.push_back(float(row.shown(d.stats.head(l, h), d.base)));
  // The range over the finite values (a head with no count, e.g. all-zero outputs, is NaN: no colour).
  std::vector<float> finite;
  for (float x : m.values)
    if (std::isfinite(x)) finite.push_back(x);
  if (finite.empty()) finite.push_back(0.f);
  const auto [lo, hi] = std::minmax_element(finite.begin(), finite.end());
  if (v.hi > 0) {  // a fixed scale
    m.lo = 0, m.hi = v.hi;
  } else if (row.share() && row.chance) {  // a rate: diverging around its chance, over the data and the chance
    m.centre = metric(row.chance).shown(Counts{}, d.base);
    m.lo = std::min(double(*lo), m.centre), m.hi = std::max(double(*hi), m.centre), m.map = ColourMap::Diverging;
  } else {  // the data's own range
    m.lo = *lo, m.hi = *hi;
  }
  if (!(m.hi > m.lo)) m.hi = m.lo + 1e-9;
  m.row_labels = numbered("L", d.L), m.col_labels = numbered("H", d.H), m.x_label = "head", m.y_label = "layer";
  m.bar_label = with_chance(v.bar, row, d.base);
  m.cell = std::clamp(420.0 / std::max(d.L, d.H), 8.0, 36.0);
  return m;
}

void aggregate_figures(const StoreData& d, std::vector<Entry>& out) {
  Aggregates a{d, out, {}};
  for (int l = 0; l < d.L; ++l) a.layers.push_back(d.stats.layer(l));
  distance_figures(a);
  head_maps(a);
  for (Entry& e : layer_figures({LayerRun{"selected pairs", kBlue, &d.base, &a.layers, &d.intervals}}, "Per layer", d.run))
    out.push_back(std::move(e));
  top_anchor_figure(a);
}

// A causal model's attention above the diagonal: no value, not low attention.
constexpr const char* kCausalMask = "key after query: causal attention has none (not low attention)";

void example_figures(const StoreData& d, const Example& x, size_t e, const std::vector<double>& roll,
                     const std::vector<std::pair<int, int>>& heads, std::vector<Entry>& figures) {
  const int n = x.n, block = legible_block(n), m = (n + block - 1) / block;
  std::vector<std::string> plabels;
  for (int i = 0; i < n; i += block) plabels.push_back(block > 1 ? x.labels[size_t(i)] + "…" : x.labels[size_t(i)]);
  const std::string pool_note =
      block > 1 ? " · block-pooled " + std::to_string(block) + "x" + std::to_string(block) + " (mean) to stay legible" : "";
  const std::string sample = "sample " + std::to_string(x.id) + " (" + std::to_string(n) + " tokens)";
  const Overlay::Shape outline = Overlay::Shape::Outline, dot = Overlay::Shape::Dot;
  for (const auto& [l, hd] : heads) {
    const std::string lh = "layer " + std::to_string(l) + " head " + std::to_string(hd);
    const std::string stem = "example" + std::to_string(e) + "_L" + std::to_string(l) + "H" + std::to_string(hd);
    const auto a = x.head(x.attention, l, hd);
    HeatmapSpec hm;
    hm.rows = hm.cols = m, hm.row_labels = hm.col_labels = plabels, hm.x_label = "key j", hm.y_label = "query i";
    hm.overlays = {Overlay{"selected pair (" + d.rule + ")", outline, Rgb{255, 255, 255}, cells_of(x.head(x.selected, l, hd), n, block)},
                   Overlay{"attention pair max(A_ij, A_ji) >= " + fixed(d.beta, 2), dot, Rgb{255, 80, 0},
                           cells_of(high_attention(a, n, d.beta), n, block)}};
    hm.values = pooled(a, n, block), hm.lo = 0, hm.bar_label = "attention weight";
    hm.hi = std::max(1e-9, double(*std::max_element(hm.values.begin(), hm.values.end())));
    if (d.model.causal) hm.masked_upper = kCausalMask;
    figures.push_back({stem + "_attention",
                       "Attention map of " + sample + ", " + lh + ", with the selected pairs and the high-attention pairs (upper triangle)",
                       heatmap_figure(hm, "Attention, " + sample + ", " + lh, d.run + pool_note)});
    const auto sim = x.head(x.similarity, l, hd);
    const ValueScale scale = similarity_scale(sim, n);
    hm.values = pooled(sim, n, block);
    hm.lo = scale.lo, hm.hi = scale.hi, hm.map = scale.map, hm.x_label = "token j", hm.y_label = "token i";
    hm.masked_upper.clear();  // o_i · o_j is defined for every pair, causal or not (SPEC §7)
    hm.bar_label = "o_i · o_j, " + scale.describe();
    // Outlines that stand out on the map: black on the pale diverging centre, white on viridis.
    hm.overlays[0].colour = scale.map == ColourMap::Diverging ? Rgb{0, 0, 0} : Rgb{255, 255, 255};
    figures.push_back({stem + "_similarity",
                       "Context similarity matrix of " + sample + ", " + lh + " (diagonal zeroed), with the same overlays",
                       heatmap_figure(hm, "Context similarity, " + sample + ", " + lh, d.run + pool_note)});
  }
  HeatmapSpec hm;
  hm.rows = hm.cols = m, hm.row_labels = hm.col_labels = plabels, hm.x_label = "input token j",
  hm.y_label = "position i after the last layer";
  hm.values = pooled(std::vector<float>(roll.begin(), roll.end()), n, block), hm.lo = 0, hm.bar_label = "rollout weight";
  hm.hi = std::max(1e-9, double(*std::max_element(hm.values.begin(), hm.values.end())));
  if (d.model.causal) hm.masked_upper = kCausalMask;
  figures.push_back(
      {"example" + std::to_string(e) + "_rollout",
       "Attention rollout of " + sample + " (Abnar & Zuidema: heads averaged, identity added, rows renormalised, layers multiplied)",
       heatmap_figure(hm, "Attention rollout, " + sample, d.run + pool_note)});
  // An encoder's [CLS] sees every token; a causal model's first token sees only itself, its last all.
  const int row = d.model.causal ? n - 1 : 0;
  const std::string who = d.model.causal ? "the last token (rollout row " + std::to_string(row) + ")" : "[CLS] (rollout row 0)";
  PlotSpec p;
  p.title = "relevance of each input token for " + who, p.y_label = "rollout weight", p.x_label = "input token", p.y_lo = 0,
  p.legend = false;
  p.x_ticks = x.labels;
  Series bars{"relevance", range(0, n), {}, kBlue, false, true};
  const auto rel = rollout_row(roll, n, row);
  bars.y.assign(rel.begin(), rel.end());
  p.series = {bars};
  figures.push_back({"example" + std::to_string(e) + "_relevance",
                     "Per-token relevance of " + sample + " for " + who + " of the attention rollout",
                     plot_figure({p}, 1, std::clamp(7.0 * n, 360.0, 1400.0), 200, "Rollout relevance, " + sample, d.run)});
}

void write_figures(const std::vector<Entry>& figures, const std::filesystem::path& dir, const std::string& page_name,
                   const PageSource& source) {
  nlohmann::json index = nlohmann::json::array();
  for (const auto& f : figures) {
    write_figure(f.figure, dir.string(), f.stem);
    nlohmann::json panels = nlohmann::json::array();
    for (const auto& p : f.figure.panels)
      panels.push_back({{"x", p.x}, {"y", p.y}, {"w", p.w}, {"h", p.h}, {"rows", p.rows}, {"cols", p.cols}});
    index.push_back({{"stem", f.stem},
                     {"caption", f.caption},
                     {"width", f.figure.width},
                     {"height", f.figure.height},
                     {"panels", panels},
                     {"page", page_name}});
    if (!source.path.empty()) index.back()["source"] = {{"store", source.path}, {"id", source.id}};
  }
  atomic_write((dir / "index.json").string(), index.dump(1) + "\n");
}

namespace {

// What dir/figures holds: the page that owns it (from its index.json; an index written before
// pages were named there belongs to the page beside it) and the files that page wrote.
struct FigureFolder {
  std::string owner;            // "" when there is no index
  std::set<std::string> files;  // names inside the folder, index.json included
  PageSource source;            // what the owning page was made from (empty: not recorded)
};

FigureFolder read_figure_folder(const std::filesystem::path& dir, const std::string& page_name) {
  namespace fs = std::filesystem;
  FigureFolder f;
  const fs::path index = dir / "figures" / "index.json";
  std::error_code ec;
  if (!fs::is_regular_file(index, ec)) return f;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file_bytes(index.string(), kMaxJsonBytes));
  } catch (const nlohmann::json::exception&) { j = nullptr; }
  if (!j.is_array())
    throw Error(index.string(), "is not the index of ctxsim's figures", "give --out a folder whose figures/ ctxsim wrote, or an empty one");
  f.files.insert("index.json");
  for (const auto& e : j) {
    if (!e.is_object() || !e.contains("stem") || !e["stem"].is_string())
      throw Error(index.string(), "is not the index of ctxsim's figures",
                  "give --out a folder whose figures/ ctxsim wrote, or an empty one");
    const std::string stem = e["stem"].get<std::string>();
    f.files.insert(stem + ".png");
    f.files.insert(stem + ".svg");
    if (e.contains("page") && e["page"].is_string()) f.owner = e["page"].get<std::string>();
    if (e.contains("source") && e["source"].is_object()) {
      const auto& s = e["source"];
      if (s.contains("store") && s["store"].is_string()) f.source.path = s["store"].get<std::string>();
      if (s.contains("id") && s["id"].is_string()) f.source.id = s["id"].get<std::string>();
    }
  }
  if (f.owner.empty())  // written before pages were named: the page beside it
    f.owner = fs::exists(dir / "report.html", ec) ? "report.html" : fs::exists(dir / "compare.html", ec) ? "compare.html" : page_name;
  return f;
}

}  // namespace

namespace {

// An exclusive lock held while a page is published in a folder: flock on the folder's
// .ctxsim-publish.lock, an empty file left in place (removing it would let a waiter lock a file
// no one else sees). flock on a file opened for writing works on local file systems and on NFS
// (as a byte-range lock); where the file system has no locks (Lustre without -o flock) the page
// is published unlocked, as before. A folder busy for ten minutes is an error, not a hang.
class FolderLock {
 public:
  explicit FolderLock(const std::filesystem::path& dir) {
    const std::string path = (dir / ".ctxsim-publish.lock").string();
    // Never through a symbolic link: one planted there would have ctxsim create or lock a file elsewhere.
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd_ < 0 && errno == ELOOP)
      throw Error(path, "is a symbolic link, and ctxsim opens its lock only as a file of its own",
                  "remove the link (ctxsim makes the file)");
    if (fd_ < 0)
      throw Error(path, std::string("cannot open the folder's lock: ") + std::strerror(errno), "give --out a folder you may write to");
    for (int waited_ms = 0; ::flock(fd_, LOCK_EX | LOCK_NB) != 0;) {
      const int e = errno;
      if (e == EINTR) continue;
      if (e == ENOLCK || e == ENOSYS || e == EOPNOTSUPP || e == EBADF || e == EINVAL) return;  // no locks here: go on unlocked
      if (e != EWOULDBLOCK) {
        ::close(fd_);
        throw Error(path, std::string("cannot lock the folder: ") + std::strerror(e), "give --out another folder");
      }
      if (waited_ms >= 600000) {
        ::close(fd_);
        throw Error(dir.string(), "another ctxsim has been writing a page into this folder for ten minutes (it holds " + path + ")",
                    "wait for it, or give --out another folder");
      }
      ::usleep(50000);
      waited_ms += 50;
    }
  }
  ~FolderLock() { ::close(fd_); }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

// A staging folder of publish_page: figures.partial (as an older ctxsim named it) or
// figures.partial.XXXXXX (mkdtemp's six characters); a user's figures.partial_old is not one.
bool is_staging_folder(const std::string& name) {
  const std::string stem = "figures.partial";
  return name == stem || (name.size() == stem.size() + 7 && name.compare(0, stem.size() + 1, stem + ".") == 0);
}

}  // namespace

std::pair<std::string, size_t> publish_page(const std::filesystem::path& dir, const std::string& page_name, const std::string& what,
                                            const std::vector<Entry>& figures,
                                            const std::function<std::string(const std::filesystem::path& staging)>& make_page,
                                            const PageSource& source) {
  namespace fs = std::filesystem;
  const FolderLock lock(dir);
  const fs::path figs = dir / "figures";
  const std::string html = (dir / page_name).string();
  std::error_code ec;
  // Staging folders left by killed publishers: no live one can exist while the lock is held.
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory(ec) && is_staging_folder(e.path().filename().string())) fs::remove_all(e.path(), ec);
  const FigureFolder before = read_figure_folder(dir, page_name);
  if (!before.owner.empty() && before.owner != page_name)
    throw Error(figs.string(), "holds the figures of " + (dir / before.owner).string() + ", which this " + what + " would overwrite",
                "give --out another folder");
  // A report replaces only a report of the same store: at the same path, or the same store copied.
  if (!source.replace && !source.path.empty() && !before.source.path.empty() && before.source.path != source.path &&
      before.source.id != source.id)
    throw Error(html, "was made from " + before.source.path + ", not from " + source.path + "; " + what + " would replace it",
                "give --out another folder, or add --overwrite to replace it");
  // A page of this name that no figure index claims is a user's (or another program's): not
  // replaced unless asked (--overwrite, output.overwrite=true).
  if (!source.replace && before.owner != page_name && fs::exists(html, ec))
    throw Error(html, "exists and ctxsim did not write it (no figures/index.json names it); this " + what + " would replace it",
                "move it away, give --out another folder, or add --overwrite to replace it");
  // Files of ours-to-be that someone else put there are not ours to replace.
  std::set<std::string> ours = {"index.json"};
  for (const auto& f : figures) ours.insert({f.stem + ".png", f.stem + ".svg"});
  for (const auto& name : ours)
    if (!before.files.count(name) && fs::exists(figs / name, ec))
      throw Error((figs / name).string(), "exists and ctxsim did not write it; this " + what + " would overwrite it",
                  "move it away, or give --out another folder");
  std::string staging_name = (dir / "figures.partial.XXXXXX").string();
  if (::mkdtemp(staging_name.data()) == nullptr)
    throw Error(dir.string(), "cannot write " + what + ": " + std::strerror(errno),
                "free space there, or give --out a folder you may write to");
  const fs::path staging = staging_name;
  try {
    write_figures(figures, staging, page_name, source);
    const std::string page = make_page(staging);
    // Commit: each figure by a rename (index.json last), the files this page no longer makes
    // removed, then the page. What others keep in figures/ stays.
    fs::create_directories(figs);
    for (const auto& name : ours)
      if (name != "index.json") fs::rename(staging / name, figs / name);
    for (const auto& name : before.files)
      if (!ours.count(name)) fs::remove(figs / name);
    fs::rename(staging / "index.json", figs / "index.json");
    fs::remove_all(staging);
    atomic_write(html, page);
    return {html, page.size()};
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(staging, ec);
    throw Error(e.path1().string(), "cannot write " + what + ": " + e.code().message(),
                "free space there, or give --out a folder you may write to");
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
}

}  // namespace ctxsim::report
