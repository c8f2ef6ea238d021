// The pruning store (see prune_store.h). The parallel-HDF5 rules of store.cpp hold: every rank
// makes the same metadata calls, storage is allocated at creation, every write is collective (a
// rank with nothing to write takes part with an empty selection).
#include "pipeline/store/prune_store.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "pipeline/store/dataset_spec.h"
#include "pipeline/store/scales.h"
#include "pipeline/store/store_reader.h"
#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/limits.h"
#include "stages/prune/prune.h"

namespace ctxsim {
namespace {

constexpr const char* kKind = "prune";

int64_t random_count(const PruneLayout& l) {
  int64_t r = 0;
  for (const auto& o : l.orders) r += o.rfind("random:", 0) == 0;
  return r;
}

bool has_score(const PruneLayout& l) { return !score_names(l.orders).empty(); }

std::vector<std::string> curve_orders(const PruneLayout& l) {
  std::vector<std::string> c;
  for (const auto& o : l.orders)
    if (o.rfind("random:", 0) != 0) c.push_back(o);
  c.push_back("random");  // the mean over the random orders
  return c;
}

// Every axis's extent in a store of layout l.
Extents extents(const PruneLayout& l) {
  const hsize_t L = hsize_t(l.layers), H = hsize_t(l.heads);
  return {{"unit", hsize_t(l.units)},
          {"layer", L},
          {"head", H},
          {"order", hsize_t(l.orders.size())},
          {"fraction", hsize_t(l.fractions)},
          {"curve", hsize_t(curve_orders(l).size())},
          {"seed", hsize_t(random_count(l))},
          {"ctxsim_score", hsize_t(score_names(l.orders).size())},
          {"rank", L * H}};
}

// The groups, their attributes and dimension scales; then the datasets of the table.
void create_datasets(hid_t file, const PruneLayout& l, hid_t dxpl, bool writer) {
  const Extents e = extents(l);
  const hsize_t F = e.at("fraction");
  const std::vector<std::string> curves = curve_orders(l);
  std::vector<int64_t> tenths;
  for (hsize_t f = 0; f < F; ++f) tenths.push_back(int64_t(f) * 10);
  const h5::Id prune = h5::create_group(file, "prune");
  h5::set_attr(prune, "orders", join(curves, "\n"));
  h5::set_attr(prune, "unit_orders", join(l.orders, "\n"));
  std::vector<std::string> shown;
  for (hsize_t f = 0; f < F; ++f) shown.push_back(f == 0 ? "0" : "0." + std::to_string(f));
  h5::set_attr(prune, "fractions", join(shown, "\n"));
  Scales s(dxpl, writer);
  const auto common = [&](hid_t g) {
    s.numbers(g, "layer", e.at("layer"), kLayerScale);
    s.numbers(g, "head", e.at("head"), kHeadScale);
    s.numbers(g, "fraction", F, "percent of the heads removed (round(p * L*H) heads)", tenths);
  };
  size_t width = 0;
  for (const auto& o : l.orders) width = std::max(width, o.size());
  for (const auto& o : curves) width = std::max(width, o.size());
  const h5::Id units = h5::create_group(prune, "units");
  common(units);
  s.numbers(units, "unit", e.at("unit"), "work unit (runtime.unit_size samples each, in sample order)");
  s.strings(units, "order", e.at("order"), width, "head order of the unit curves", l.orders);
  common(prune);
  s.strings(prune, "order", e.at("order"), width, "head order (its first entry removed first)", l.orders);
  s.strings(prune, "curve", e.at("curve"), width, "curve of an order; random: the mean over the random orders", curves);
  s.numbers(prune, "seed", e.at("seed"), "seed of a random order");
  s.numbers(prune, "rank", e.at("rank"), "position in an order (0: removed first)");
  if (has_score(l))
    s.strings(prune, "ctxsim_score", e.at("ctxsim_score"), width, "a ctxsim score of prune.scores_from (its order: score:<name>)",
              score_names(l.orders));
  ctxsim::create_datasets(file, prune_datasets(), e, has_score(l));
  attach_scales(file, prune_datasets());
}

// The /prune results bound to PruneResults' members, in the table's order (order_heads, written
// with the orders, apart): write_results, the reader and the digest go through these.
struct Bound {
  const char* name;
  std::vector<double>* values;
};
std::vector<Bound> bound(PruneResults& r) {
  return {{"score", &r.score},
          {"importance", &r.importance},
          {"importance_normalised", &r.importance_normalised},
          {"ablation_loss", &r.ablation_loss},
          {"entropy", &r.entropy},
          {"curve_loss", &r.curve_loss},
          {"curve_accuracy", &r.curve_accuracy},
          {"curve_loss_random", &r.curve_loss_random},
          {"curve_accuracy_random", &r.curve_accuracy_random}};
}

// Row `at` of a per-unit dataset of /prune/units (mine: this rank writes it; else it takes part
// with nothing).
template <class T>
void put(hid_t file, const PruneLayout& l, const char* name, const T* data, hsize_t at, bool mine, hid_t dxpl) {
  const DatasetSpec& spec = spec_named(prune_datasets(), "prune/units", name);
  const std::vector<hsize_t> dims = extents_of(spec, extents(l));
  const h5::Id ds(H5Dopen2(file, spec.path().c_str(), H5P_DEFAULT), H5Dclose, name);
  std::vector<hsize_t> start{mine ? at : 0}, count{mine ? hsize_t(1) : 0};
  for (size_t x = 1; x < dims.size(); ++x) start.push_back(0), count.push_back(mine ? dims[x] : 0);
  h5::write_slab(ds, data, start, count, dxpl);
}

// A whole dataset of /prune from rank 0 (the writer).
template <class T>
void put_all(hid_t file, const PruneLayout& l, const char* name, const std::vector<T>& v, bool writer, hid_t dxpl) {
  const DatasetSpec& spec = spec_named(prune_datasets(), "prune", name);
  const std::vector<hsize_t> dims = extents_of(spec, extents(l));
  hsize_t n = 1;
  for (hsize_t d : dims) n *= d;
  if (n == 0) return;  // no storage to write (and MPI-IO refuses an empty collective write)
  if (writer) CTXSIM_CHECK(v.size() == n, std::string("prune store: ") + name + " does not match the layout");
  const h5::Id ds(H5Dopen2(file, spec.path().c_str(), H5P_DEFAULT), H5Dclose, name);
  std::vector<hsize_t> count = dims;
  if (!writer)
    for (auto& c : count) c = 0;
  h5::write_slab(ds, v.data(), std::vector<hsize_t>(dims.size(), 0), count, dxpl);
}

}  // namespace

std::vector<std::string> score_names(const std::vector<std::string>& orders) {
  std::vector<std::string> names;
  for (const auto& o : orders)
    if (o.rfind("score:", 0) == 0) names.push_back(o.substr(6));
  return names;
}

const std::vector<DatasetSpec>& prune_datasets() {
  // clang-format off
  static const std::vector<DatasetSpec> rows = {
    // Per work unit: the sums a resume keeps and the results are made of, a row per unit.
    {"prune/units", "loss",             Element::Float64, {"unit"}, "[unit] summed cross-entropy (nats) of the full model over the unit's predicted positions", kRowChunks},
    {"prune/units", "correct",          Element::Int64,   {"unit"}, "[unit] predicted positions whose arg-max is the original token", kRowChunks},
    {"prune/units", "predicted",        Element::Int64,   {"unit"}, "[unit] predicted positions (masked, or every valid one but the last for the next-token objective)", kRowChunks},
    {"prune/units", "importance",       Element::Float64, {"unit", "layer", "head"}, "[unit, layer, head] sum over samples of |dL_s/dxi| at xi = 1", kRowChunks},
    {"prune/units", "entropy",          Element::Float64, {"unit", "layer", "head"}, "[unit, layer, head] sum over samples of the mean attention entropy (nats)", kRowChunks},
    {"prune/units", "ablation_loss",    Element::Float64, {"unit", "layer", "head"}, "[unit, layer, head] summed loss with the head alone removed", kRowChunks},
    {"prune/units", "ablation_correct", Element::Int64,   {"unit", "layer", "head"}, "[unit, layer, head] correct predictions with the head alone removed", kRowChunks},
    {"prune/units", "curve_loss",       Element::Float64, {"unit", "order", "fraction"}, "[unit, order, fraction] summed loss with the order's first heads removed", kRowChunks},
    {"prune/units", "curve_correct",    Element::Int64,   {"unit", "order", "fraction"}, "[unit, order, fraction] correct predictions, the same heads removed", kRowChunks},
    // The results, from rank 0 at the end.
    {"prune", "order_heads",           Element::Int64,   {"order", "rank"}, "[order, rank] flat head index l*H + h, the first removed first"},
    {"prune", "score",                 Element::Float64, {"ctxsim_score", "layer", "head"}, "[ctxsim_score, layer, head] each ctxsim score of prune.scores_from, which its order score:<name> sorts", {}, true},
    {"prune", "importance",            Element::Float64, {"layer", "head"}, "[layer, head] sum over samples of |dL_s/dxi_{l,h}| at xi = 1 (Michel et al. 2019)"},
    {"prune", "importance_normalised", Element::Float64, {"layer", "head"}, "[layer, head] importance divided by the L2 norm of its layer's importances"},
    {"prune", "ablation_loss",         Element::Float64, {"layer", "head"}, "[layer, head] mean loss with the head alone removed, minus the full model's"},
    {"prune", "entropy",               Element::Float64, {"layer", "head"}, "[layer, head] mean over samples of the head's mean attention entropy over valid query rows (nats)"},
    {"prune", "curve_loss",            Element::Float64, {"curve", "fraction"}, "[curve, fraction] mean loss over predicted positions"},
    {"prune", "curve_accuracy",        Element::Float64, {"curve", "fraction"}, "[curve, fraction] share of predicted positions correct"},
    {"prune", "curve_loss_random",     Element::Float64, {"seed", "fraction"}, "[seed, fraction] mean loss of each random order"},
    {"prune", "curve_accuracy_random", Element::Float64, {"seed", "fraction"}, "[seed, fraction] accuracy of each random order"},
  };
  // clang-format on
  return rows;
}

double prune_store_bytes(const PruneLayout& l) {
  const double U = double(l.units), LH = double(l.heads_total()), O = double(l.orders.size()), F = double(l.fractions);
  const double C = O + 1, R = double(random_count(l));
  // /prune/units: three numbers, four per-head sums and two curves a unit; /prune: the orders,
  // five per-head maps, the curves; the scales' labels (about 64 bytes an order).
  return U * (24 + LH * 32 + O * F * 16) + O * LH * 8 + LH * 40 + (C + R) * F * 16 + (O + C) * 64 + 4096;
}

PruneStore::PruneStore(const std::string& path, MPI_Comm comm, int rank, const PruneLayout& layout)
    : StoreFile(path, comm, rank, prune_store_bytes(layout)), layout_(layout) {}

PruneStore::PruneStore(const std::string& path, MPI_Comm comm, int rank, const PruneLayout& layout, const StoreAttributes& attrs)
    : StoreFile(path, comm, rank, prune_store_bytes(layout), attrs, kKind), layout_(layout) {}

PruneStore PruneStore::create(const std::string& path, MPI_Comm comm, int rank, const PruneLayout& layout, const StoreAttributes& attrs) {
  PruneStore st(path, comm, rank, layout, attrs);
  st.build([&] {
    h5::set_attr(st.file_, "full_loss", 0.0);
    h5::set_attr(st.file_, "full_accuracy", 0.0);
    create_datasets(st.file_, layout, st.collective_, rank == 0);
  });
  return st;
}

PruneStore PruneStore::open(const std::string& path, MPI_Comm comm, int rank, const PruneLayout& layout) {
  return PruneStore(path, comm, rank, layout);
}

void PruneStore::write_pass1(int64_t u, const PrunePass1* r) {
  const hsize_t LH = hsize_t(layout_.heads_total());
  if (r) CTXSIM_CHECK(r->importance.size() == LH && r->ablation_correct.size() == LH, "prune store: a unit's row does not match");
  const bool mine = r != nullptr;
  const hsize_t at = hsize_t(std::max<int64_t>(u, 0));
  put(file_, layout_, "loss", mine ? &r->loss : nullptr, at, mine, collective_);
  put(file_, layout_, "correct", mine ? &r->correct : nullptr, at, mine, collective_);
  put(file_, layout_, "predicted", mine ? &r->predicted : nullptr, at, mine, collective_);
  put(file_, layout_, "importance", mine ? r->importance.data() : nullptr, at, mine, collective_);
  put(file_, layout_, "entropy", mine ? r->entropy.data() : nullptr, at, mine, collective_);
  put(file_, layout_, "ablation_loss", mine ? r->ablation_loss.data() : nullptr, at, mine, collective_);
  put(file_, layout_, "ablation_correct", mine ? r->ablation_correct.data() : nullptr, at, mine, collective_);
}

void PruneStore::write_pass2(int64_t u, const PrunePass2* r) {
  const hsize_t OF = hsize_t(layout_.orders.size() * layout_.fractions);
  if (r) CTXSIM_CHECK(r->loss.size() == OF && r->correct.size() == OF, "prune store: a unit's curves do not match");
  const bool mine = r != nullptr;
  const hsize_t at = hsize_t(std::max<int64_t>(u, 0));
  put(file_, layout_, "curve_loss", mine ? r->loss.data() : nullptr, at, mine, collective_);
  put(file_, layout_, "curve_correct", mine ? r->correct.data() : nullptr, at, mine, collective_);
}

std::vector<PrunePass1> PruneStore::read_pass1() {
  const h5::Id g = h5::open_group(file_, "prune/units");
  const size_t U = size_t(layout_.units), LH = size_t(layout_.heads_total());
  const auto loss = h5::read_all<double>(g, "loss");
  const auto correct = h5::read_all<int64_t>(g, "correct"), predicted = h5::read_all<int64_t>(g, "predicted");
  const auto imp = h5::read_all<double>(g, "importance"), ent = h5::read_all<double>(g, "entropy");
  const auto abl = h5::read_all<double>(g, "ablation_loss");
  const auto ablc = h5::read_all<int64_t>(g, "ablation_correct");
  CTXSIM_CHECK(loss.size() == U && imp.size() == U * LH && ablc.size() == U * LH, "prune store: unit rows of another layout");
  std::vector<PrunePass1> rows(U);
  for (size_t u = 0; u < U; ++u) {
    PrunePass1& r = rows[u];
    r.loss = loss[u], r.correct = correct[u], r.predicted = predicted[u];
    r.importance.assign(imp.begin() + ptrdiff_t(u * LH), imp.begin() + ptrdiff_t((u + 1) * LH));
    r.entropy.assign(ent.begin() + ptrdiff_t(u * LH), ent.begin() + ptrdiff_t((u + 1) * LH));
    r.ablation_loss.assign(abl.begin() + ptrdiff_t(u * LH), abl.begin() + ptrdiff_t((u + 1) * LH));
    r.ablation_correct.assign(ablc.begin() + ptrdiff_t(u * LH), ablc.begin() + ptrdiff_t((u + 1) * LH));
  }
  return rows;
}

std::vector<PrunePass2> PruneStore::read_pass2() {
  const h5::Id g = h5::open_group(file_, "prune/units");
  const size_t U = size_t(layout_.units), OF = layout_.orders.size() * size_t(layout_.fractions);
  const auto loss = h5::read_all<double>(g, "curve_loss");
  const auto correct = h5::read_all<int64_t>(g, "curve_correct");
  CTXSIM_CHECK(loss.size() == U * OF && correct.size() == U * OF, "prune store: curve rows of another layout");
  std::vector<PrunePass2> rows(U);
  for (size_t u = 0; u < U; ++u) {
    rows[u].loss.assign(loss.begin() + ptrdiff_t(u * OF), loss.begin() + ptrdiff_t((u + 1) * OF));
    rows[u].correct.assign(correct.begin() + ptrdiff_t(u * OF), correct.begin() + ptrdiff_t((u + 1) * OF));
  }
  return rows;
}

void PruneStore::write_orders(const std::vector<int64_t>& order_heads) {
  put_all(file_, layout_, "order_heads", order_heads, rank_ == 0, collective_);
}

void PruneStore::write_results(const PruneResults& r) {
  for (const Bound& b : bound(const_cast<PruneResults&>(r)))
    if (std::string(b.name) != "score" || has_score(layout_)) put_all(file_, layout_, b.name, *b.values, rank_ == 0, collective_);
  h5::set_attr(file_, "full_loss", r.full_loss);
  h5::set_attr(file_, "full_accuracy", r.full_accuracy);
}

std::string PruneStore::results_digest_now() { return results_digest(read_prune_store(file_, path_)); }

std::string results_digest(const PruneStoreData& d) {
  Sha256 h;
  const auto field = [&](const char* name, const auto& v) {
    h.update_field(name);
    h.update_field(std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(v[0])));
  };
  h.update_field(join(d.layout.orders, "\n"));
  h.update_field(join(d.curve_orders, "\n"));
  const std::vector<double> full = {d.results.full_loss, d.results.full_accuracy};
  field("full", full);
  field("order_heads", d.results.order_heads);
  for (const Bound& b : bound(const_cast<PruneResults&>(d.results))) field(b.name, *b.values);
  return h.hex();
}

PruneStoreData read_prune_store(hid_t file, const std::string& store) {
  require_store_job(file, kKind);
  PruneStoreData d;
  if (!h5::exists(file, "prune")) throw Error(store, "missing group /prune", kDamagedStoreFix);
  const h5::Id g = h5::open_group(file, "prune");
  for (const char* a : {"orders", "unit_orders", "fractions"})
    if (!h5::has_attr(g, a)) throw Error(store, std::string("/prune has no ") + a + " attribute", kDamagedStoreFix);
  const auto lines = [&](const char* a) { return split_lines(h5::get_attr_string(g, a)); };
  PruneLayout& l = d.layout;
  l.orders = lines("unit_orders");
  d.curve_orders = lines("orders");
  l.fractions = int64_t(lines("fractions").size());
  PruneResults& r = d.results;
  std::map<std::string, long long> known = {
      {"fraction", l.fractions}, {"curve", (long long)d.curve_orders.size()}, {"order", (long long)l.orders.size()}};
  std::vector<hsize_t> dims;
  (void)read_spec<double>(file, store, spec_named(prune_datasets(), "prune", "importance"), {}, &dims);
  l.layers = int64_t(dims[0]), l.heads = int64_t(dims[1]);
  if (l.layers < 1 || l.heads < 1 || l.layers > kLayersOrHeads.hi || l.heads > kLayersOrHeads.hi || l.fractions != 10 ||
      d.curve_orders.empty() || int64_t(d.curve_orders.size()) > int64_t(l.orders.size()) + 1)
    throw Error(store, "/prune's shapes and attributes do not describe a pruning store", kDamagedStoreFix);
  known["layer"] = l.layers, known["head"] = l.heads, known["rank"] = l.heads_total();
  // Every result is a finite number (a NaN or inf would be drawn as a colour or a rank); an axis
  // first seen in one dataset (the random orders' seeds) holds for the next.
  d.scores = score_names(d.curve_orders);
  known["ctxsim_score"] = (long long)d.scores.size();
  for (const Bound& b : bound(r)) {
    const DatasetSpec& spec = spec_named(prune_datasets(), "prune", b.name);
    if (spec.optional && !h5::exists(file, spec.path())) continue;
    if (std::string(b.name) == "score" && d.scores.size() == 1 &&
        !h5::exists(file, "prune/ctxsim_score")) {  // one score, before lists: [layer, head]
      const DatasetSpec one{"prune", "score", Element::Float64, {"layer", "head"}, ""};
      *b.values = read_spec<double>(file, store, one, known);
      continue;
    }
    *b.values = read_spec<double>(file, store, spec, known, &dims);
    for (size_t a = 0; a < spec.axes.size(); ++a) known.emplace(spec.axes[a], (long long)dims[a]);
    for (const double x : *b.values)
      if (!std::isfinite(x)) throw Error(store, "/" + spec.path() + " holds a value that is not finite", kDamagedStoreFix);
  }
  if (r.score.size() != d.scores.size() * size_t(l.heads_total()))  // an order score:<name> needs its values
    throw Error(store, "/prune/score does not hold a value per head for each of its " + std::to_string(d.scores.size()) + " score orders",
                kDamagedStoreFix);
  r.order_heads = read_spec<int64_t>(file, store, spec_named(prune_datasets(), "prune", "order_heads"), known);
  r.full_loss = h5::get_attr_double(file, "full_loss");
  r.full_accuracy = h5::get_attr_double(file, "full_accuracy");
  d.model_path = h5::get_attr_string(file, "model_path");
  d.causal = h5::has_attr(file, "causal") && h5::get_attr_int(file, "causal") == 1;
  // What each quantity can be (SPEC §8): accuracies and normalised importances in [0, 1], losses,
  // importances and entropies not negative (an ablation's loss is a difference: any sign).
  const std::pair<const char*, const std::vector<double>*> shares[] = {{"curve_accuracy", &r.curve_accuracy},
                                                                       {"curve_accuracy_random", &r.curve_accuracy_random},
                                                                       {"importance_normalised", &r.importance_normalised}};
  for (const auto& [name, values] : shares)
    for (const double v : *values)
      if (!(v >= 0 && v <= 1)) throw Error(store, std::string("/prune/") + name + " holds a value outside [0, 1]", kDamagedStoreFix);
  const std::pair<const char*, const std::vector<double>*> positive[] = {
      {"curve_loss", &r.curve_loss}, {"curve_loss_random", &r.curve_loss_random}, {"importance", &r.importance}, {"entropy", &r.entropy}};
  for (const auto& [name, values] : positive)
    for (const double v : *values)
      if (!(v >= 0)) throw Error(store, std::string("/prune/") + name + " holds a negative value", kDamagedStoreFix);
  if (!std::isfinite(r.full_loss) || !(r.full_accuracy >= 0 && r.full_accuracy <= 1))
    throw Error(store, "its full_loss or full_accuracy attribute is not a loss or an accuracy", kDamagedStoreFix);
  // Each order is one ctxsim makes (SPEC §8), and removes every head once: its row is a
  // permutation of the heads.
  for (const std::string& o : l.orders) {
    const bool random = o.rfind("random:", 0) == 0 && o.size() > 7 && o.find_first_not_of("0123456789", 7) == std::string::npos;
    if (!random && o != "importance" && o != "ablation" && o != "entropy" && !(o.rfind("score:", 0) == 0 && prune::score_row(o.substr(6))))
      throw Error(store, "/prune's unit_orders names an order ctxsim does not make: '" + o + "'", kDamagedStoreFix);
  }
  const int64_t LH = l.heads_total();
  for (size_t o = 0; o < l.orders.size(); ++o) {
    std::vector<uint8_t> seen(size_t(LH), 0);
    for (int64_t i = 0; i < LH; ++i) {
      const int64_t k = r.order_heads[o * size_t(LH) + size_t(i)];
      if (k < 0 || k >= LH) throw Error(store, "/prune/order_heads names a head the model does not have", kDamagedStoreFix);
      if (seen[size_t(k)]++)
        throw Error(store, "/prune/order_heads: the order " + l.orders[o] + " removes head " + std::to_string(k) + " twice",
                    kDamagedStoreFix);
    }
  }
  // The curves are the unit orders' own: each one that is not random, then the random orders' mean.
  if (curve_orders(l) != d.curve_orders)
    throw Error(store, "/prune's orders attribute does not name the curves of its unit_orders", kDamagedStoreFix);
  // Written at the end since this digest came in (a store without it is older): checked whenever there.
  if (h5::has_attr(file, "results_sha256") && h5::get_attr_string(file, "results_sha256") != results_digest(d))
    throw Error(store, "its results do not match the SHA-256 written with them (results_sha256): the file changed after ctxsim wrote it",
                kDamagedStoreFix);
  return d;
}

}  // namespace ctxsim
