// The pruning store (see prune_store.h). The parallel-HDF5 rules of store.cpp hold: every rank
// makes the same metadata calls, storage is allocated at creation, every write is collective (a
// rank with nothing to write takes part with an empty selection).
#include "pipeline/store/prune_store.h"

#include <cmath>
#include <cstdio>

#include "pipeline/store/scales.h"
#include "pipeline/store/store_reader.h"
#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/limits.h"

namespace ctxsim {
namespace {

constexpr const char* kKind = "prune";

int64_t random_count(const PruneLayout& l) {
  int64_t r = 0;
  for (const auto& o : l.orders) r += o.rfind("random:", 0) == 0;
  return r;
}

bool has_score(const PruneLayout& l) {
  for (const auto& o : l.orders)
    if (o.rfind("score:", 0) == 0) return true;
  return false;
}

std::vector<std::string> curve_orders(const PruneLayout& l) {
  std::vector<std::string> c;
  for (const auto& o : l.orders)
    if (o.rfind("random:", 0) != 0) c.push_back(o);
  c.push_back("random");  // the mean over the random orders
  return c;
}

void create_datasets(hid_t file, const PruneLayout& l, hid_t dxpl, bool writer) {
  const hsize_t U = hsize_t(l.units), L = hsize_t(l.layers), H = hsize_t(l.heads), O = hsize_t(l.orders.size());
  const hsize_t F = hsize_t(l.fractions), R = hsize_t(random_count(l));
  const std::vector<std::string> curves = curve_orders(l);
  const hsize_t C = hsize_t(curves.size());
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
    s.numbers(g, "layer", L, kLayerScale);
    s.numbers(g, "head", H, kHeadScale);
    s.numbers(g, "fraction", F, "percent of the heads removed (round(p * L*H) heads)", tenths);
  };
  size_t width = 0;
  for (const auto& o : l.orders) width = std::max(width, o.size());
  for (const auto& o : curves) width = std::max(width, o.size());
  const h5::Id units = h5::create_group(prune, "units");
  common(units);
  s.numbers(units, "unit", U, "work unit (runtime.unit_size samples each, in sample order)");
  s.strings(units, "order", O, width, "head order of the unit curves", l.orders);
  h5::create_dataset<double>(units, "loss", {U}, "[unit] summed cross-entropy (nats) of the full model over the unit's predicted positions",
                             1);
  h5::create_dataset<int64_t>(units, "correct", {U}, "[unit] predicted positions whose arg-max is the original token", 1);
  h5::create_dataset<int64_t>(units, "predicted", {U}, "[unit] predicted (masked) positions", 1);
  h5::create_dataset<double>(units, "importance", {U, L, H}, "[unit, layer, head] sum over samples of |dL_s/dxi| at xi = 1", 1);
  h5::create_dataset<double>(units, "entropy", {U, L, H}, "[unit, layer, head] sum over samples of the mean attention entropy (nats)", 1);
  h5::create_dataset<double>(units, "ablation_loss", {U, L, H}, "[unit, layer, head] summed loss with the head alone removed", 1);
  h5::create_dataset<int64_t>(units, "ablation_correct", {U, L, H}, "[unit, layer, head] correct predictions with the head alone removed",
                              1);
  h5::create_dataset<double>(units, "curve_loss", {U, O, F}, "[unit, order, fraction] summed loss with the order's first heads removed", 1);
  h5::create_dataset<int64_t>(units, "curve_correct", {U, O, F}, "[unit, order, fraction] correct predictions, the same heads removed", 1);
  for (const char* n : {"importance", "entropy", "ablation_loss", "ablation_correct"}) Scales::attach(units, n, {"unit", "layer", "head"});
  for (const char* n : {"curve_loss", "curve_correct"}) Scales::attach(units, n, {"unit", "order", "fraction"});
  for (const char* n : {"loss", "correct", "predicted"}) Scales::attach(units, n, {"unit"});
  common(prune);
  s.strings(prune, "order", O, width, "head order (its first entry removed first)", l.orders);
  s.strings(prune, "curve", C, width, "curve of an order; random: the mean over the random orders", curves);
  s.numbers(prune, "seed", R, "seed of a random order");
  s.numbers(prune, "rank", L * H, "position in an order (0: removed first)");
  h5::create_dataset<int64_t>(prune, "order_heads", {O, L * H}, "[order, rank] flat head index l*H + h, the first removed first");
  Scales::attach(prune, "order_heads", {"order", "rank"});
  const std::pair<const char*, const char*> per_head[] = {
      {"importance", "sum over samples of |dL_s/dxi_{l,h}| at xi = 1 (Michel et al. 2019)"},
      {"importance_normalised", "importance divided by the L2 norm of its layer's importances"},
      {"ablation_loss", "mean loss with the head alone removed, minus the full model's"},
      {"entropy", "mean over samples of the head's mean attention entropy over valid query rows (nats)"}};
  if (has_score(l)) {
    h5::create_dataset<double>(prune, "score", {L, H}, "[layer, head] the ctxsim score of prune.scores_from that the score order sorts");
    Scales::attach(prune, "score", {"layer", "head"});
  }
  for (const auto& [n, d] : per_head) {
    h5::create_dataset<double>(prune, n, {L, H}, std::string("[layer, head] ") + d);
    Scales::attach(prune, n, {"layer", "head"});
  }
  h5::create_dataset<double>(prune, "curve_loss", {C, F}, "[curve, fraction] mean loss over predicted positions");
  h5::create_dataset<double>(prune, "curve_accuracy", {C, F}, "[curve, fraction] share of predicted positions correct");
  h5::create_dataset<double>(prune, "curve_loss_random", {R, F}, "[seed, fraction] mean loss of each random order");
  h5::create_dataset<double>(prune, "curve_accuracy_random", {R, F}, "[seed, fraction] accuracy of each random order");
  for (const char* n : {"curve_loss", "curve_accuracy"}) Scales::attach(prune, n, {"curve", "fraction"});
  for (const char* n : {"curve_loss_random", "curve_accuracy_random"}) Scales::attach(prune, n, {"seed", "fraction"});
}

template <class T>
void put(hid_t group, const char* name, const T* data, hsize_t at, bool mine, std::vector<hsize_t> rest, hid_t dxpl) {
  const h5::Id ds(H5Dopen2(group, name, H5P_DEFAULT), H5Dclose, name);
  std::vector<hsize_t> start{mine ? at : 0}, count{mine ? hsize_t(1) : 0};
  for (hsize_t x : rest) start.push_back(0), count.push_back(mine ? x : 0);
  h5::write_slab(ds, data, start, count, dxpl);
}

template <class T>
void put_all(hid_t group, const char* name, const std::vector<T>& v, std::vector<hsize_t> dims, bool writer, hid_t dxpl) {
  hsize_t n = 1;
  for (hsize_t d : dims) n *= d;
  if (n == 0) return;  // no storage to write (and MPI-IO refuses an empty collective write)
  if (writer) CTXSIM_CHECK(v.size() == n, std::string("prune store: ") + name + " does not match the layout");
  const h5::Id ds(H5Dopen2(group, name, H5P_DEFAULT), H5Dclose, name);
  std::vector<hsize_t> count = dims;
  if (!writer)
    for (auto& c : count) c = 0;
  h5::write_slab(ds, v.data(), std::vector<hsize_t>(dims.size(), 0), count, dxpl);
}

}  // namespace

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
  const hsize_t L = hsize_t(layout_.layers), H = hsize_t(layout_.heads);
  if (r) CTXSIM_CHECK(r->importance.size() == L * H && r->ablation_correct.size() == L * H, "prune store: a unit's row does not match");
  const h5::Id g = h5::open_group(file_, "prune/units");
  const bool mine = r != nullptr;
  const hsize_t at = hsize_t(std::max<int64_t>(u, 0));
  put(g, "loss", mine ? &r->loss : nullptr, at, mine, {}, collective_);
  put(g, "correct", mine ? &r->correct : nullptr, at, mine, {}, collective_);
  put(g, "predicted", mine ? &r->predicted : nullptr, at, mine, {}, collective_);
  put(g, "importance", mine ? r->importance.data() : nullptr, at, mine, {L, H}, collective_);
  put(g, "entropy", mine ? r->entropy.data() : nullptr, at, mine, {L, H}, collective_);
  put(g, "ablation_loss", mine ? r->ablation_loss.data() : nullptr, at, mine, {L, H}, collective_);
  put(g, "ablation_correct", mine ? r->ablation_correct.data() : nullptr, at, mine, {L, H}, collective_);
}

void PruneStore::write_pass2(int64_t u, const PrunePass2* r) {
  const hsize_t O = hsize_t(layout_.orders.size()), F = hsize_t(layout_.fractions);
  if (r) CTXSIM_CHECK(r->loss.size() == O * F && r->correct.size() == O * F, "prune store: a unit's curves do not match");
  const h5::Id g = h5::open_group(file_, "prune/units");
  const bool mine = r != nullptr;
  const hsize_t at = hsize_t(std::max<int64_t>(u, 0));
  put(g, "curve_loss", mine ? r->loss.data() : nullptr, at, mine, {O, F}, collective_);
  put(g, "curve_correct", mine ? r->correct.data() : nullptr, at, mine, {O, F}, collective_);
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
  const h5::Id g = h5::open_group(file_, "prune");
  put_all(g, "order_heads", order_heads, {hsize_t(layout_.orders.size()), hsize_t(layout_.heads_total())}, rank_ == 0, collective_);
}

void PruneStore::write_results(const PruneResults& r) {
  const h5::Id g = h5::open_group(file_, "prune");
  const hsize_t L = hsize_t(layout_.layers), H = hsize_t(layout_.heads), F = hsize_t(layout_.fractions);
  const hsize_t C = hsize_t(curve_orders(layout_).size()), R = hsize_t(random_count(layout_));
  const bool w = rank_ == 0;
  put_all(g, "importance", r.importance, {L, H}, w, collective_);
  put_all(g, "importance_normalised", r.importance_normalised, {L, H}, w, collective_);
  put_all(g, "ablation_loss", r.ablation_loss, {L, H}, w, collective_);
  put_all(g, "entropy", r.entropy, {L, H}, w, collective_);
  put_all(g, "curve_loss", r.curve_loss, {C, F}, w, collective_);
  put_all(g, "curve_accuracy", r.curve_accuracy, {C, F}, w, collective_);
  put_all(g, "curve_loss_random", r.curve_loss_random, {R, F}, w, collective_);
  if (has_score(layout_)) put_all(g, "score", r.score, {L, H}, w, collective_);
  put_all(g, "curve_accuracy_random", r.curve_accuracy_random, {R, F}, w, collective_);
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
  const PruneResults& r = d.results;
  const std::vector<double> full = {r.full_loss, r.full_accuracy};
  field("full", full);
  field("importance", r.importance);
  field("importance_normalised", r.importance_normalised);
  field("ablation_loss", r.ablation_loss);
  field("entropy", r.entropy);
  field("curve_loss", r.curve_loss);
  field("curve_accuracy", r.curve_accuracy);
  field("curve_loss_random", r.curve_loss_random);
  field("curve_accuracy_random", r.curve_accuracy_random);
  field("order_heads", r.order_heads);
  field("score", r.score);
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
  std::vector<hsize_t> dims;
  PruneResults& r = d.results;
  r.importance = read_checked<double>(file, store, "prune/importance", {-1, -1}, &dims);
  l.layers = int64_t(dims[0]), l.heads = int64_t(dims[1]);
  if (l.layers < 1 || l.heads < 1 || l.layers > kLayersOrHeads.hi || l.heads > kLayersOrHeads.hi || l.fractions != 10 ||
      d.curve_orders.empty() || int64_t(d.curve_orders.size()) > int64_t(l.orders.size()) + 1)
    throw Error(store, "/prune's shapes and attributes do not describe a pruning store", kDamagedStoreFix);
  const long long L = l.layers, H = l.heads, C = (long long)d.curve_orders.size(), F = l.fractions;
  r.importance_normalised = read_checked<double>(file, store, "prune/importance_normalised", {L, H});
  r.ablation_loss = read_checked<double>(file, store, "prune/ablation_loss", {L, H});
  r.entropy = read_checked<double>(file, store, "prune/entropy", {L, H});
  r.curve_loss = read_checked<double>(file, store, "prune/curve_loss", {C, F});
  r.curve_accuracy = read_checked<double>(file, store, "prune/curve_accuracy", {C, F});
  r.curve_loss_random = read_checked<double>(file, store, "prune/curve_loss_random", {-1, F});
  r.curve_accuracy_random = read_checked<double>(file, store, "prune/curve_accuracy_random", {-1, F});
  r.order_heads = read_checked<int64_t>(file, store, "prune/order_heads", {(long long)l.orders.size(), L * H});
  if (h5::exists(file, "prune/score")) r.score = read_checked<double>(file, store, "prune/score", {L, H});
  for (size_t i = 0; i < d.curve_orders.size(); ++i)
    if (d.curve_orders[i].rfind("score:", 0) == 0) d.score = d.curve_orders[i].substr(6);
  r.full_loss = h5::get_attr_double(file, "full_loss");
  r.full_accuracy = h5::get_attr_double(file, "full_accuracy");
  d.model_path = h5::get_attr_string(file, "model_path");
  for (const double v : r.curve_accuracy)
    if (!(v >= 0 && v <= 1)) throw Error(store, "/prune/curve_accuracy holds a value outside [0, 1]", kDamagedStoreFix);
  // Every result is a finite number (a NaN or inf would be drawn as a colour or a rank).
  const std::pair<const char*, const std::vector<double>*> values[] = {{"importance", &r.importance},
                                                                       {"importance_normalised", &r.importance_normalised},
                                                                       {"ablation_loss", &r.ablation_loss},
                                                                       {"entropy", &r.entropy},
                                                                       {"curve_loss", &r.curve_loss},
                                                                       {"curve_loss_random", &r.curve_loss_random},
                                                                       {"curve_accuracy_random", &r.curve_accuracy_random},
                                                                       {"score", &r.score}};
  for (const auto& [name, v] : values)
    for (const double x : *v)
      if (!std::isfinite(x)) throw Error(store, std::string("/prune/") + name + " holds a value that is not finite", kDamagedStoreFix);
  if (!std::isfinite(r.full_loss) || !(r.full_accuracy >= 0 && r.full_accuracy <= 1))
    throw Error(store, "its full_loss or full_accuracy attribute is not a loss or an accuracy", kDamagedStoreFix);
  for (const int64_t k : r.order_heads)
    if (k < 0 || k >= l.heads_total()) throw Error(store, "/prune/order_heads names a head the model does not have", kDamagedStoreFix);
  // Written at the end since this digest came in (a store without it is older): checked whenever there.
  if (h5::has_attr(file, "results_sha256") && h5::get_attr_string(file, "results_sha256") != results_digest(d))
    throw Error(store, "its results do not match the SHA-256 written with them (results_sha256): the file changed after ctxsim wrote it",
                kDamagedStoreFix);
  return d;
}

}  // namespace ctxsim
