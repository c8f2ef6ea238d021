// The summary of a segmentation store: every method's mean Pk and WindowDiff per subset, each
// model-derived method at the layer that segments best on the dev documents (chosen there, then
// measured on the test subsets), Pk by layer, and the heads that segment best.
#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>

#include "pipeline/store/segment_summary.h"
#include "stages/base/files.h"

namespace ctxsim {

SegmentTable segment_table(const SegmentResults& r) {
  const SegmentLayout& l = r.layout;
  const size_t D = size_t(l.documents), M = l.methods.size(), S = l.subsets.size();
  SegmentTable t;
  t.subsets = l.subsets;
  t.methods = l.methods;
  t.pk.assign(M * S, 0), t.window_diff.assign(M * S, 0), t.documents.assign(S, 0);
  for (size_t d = 0; d < D; ++d) {
    const size_t s = size_t(r.subset[d]);
    ++t.documents[s];
    for (size_t m = 0; m < M; ++m) t.pk[m * S + s] += r.pk[d * M + m], t.window_diff[m * S + s] += r.window_diff[d * M + m];
  }
  for (size_t m = 0; m < M; ++m)
    for (size_t s = 0; s < S; ++s)
      if (t.documents[s] > 0) t.pk[m * S + s] /= double(t.documents[s]), t.window_diff[m * S + s] /= double(t.documents[s]);
  const size_t L = size_t(l.layers), H = size_t(l.heads);
  t.head_pk.assign(L * H * S, 0);
  for (size_t d = 0; d < D; ++d)
    for (size_t k = 0; k < L * H; ++k)
      t.head_pk[k * S + size_t(r.subset[d])] += r.head_pk[d * L * H + k] / double(t.documents[size_t(r.subset[d])]);
  t.dev = size_t(std::find(l.subsets.begin(), l.subsets.end(), "dev") - l.subsets.begin());
  if (t.dev >= S) t.dev = 0;  // a store without dev documents: layers are chosen on its first subset
  return t;
}

size_t SegmentTable::first_test() const { return dev == 0 && subsets.size() > 1 ? 1 : 0; }

double SegmentTable::pk_of(const std::string& method, size_t subset) const {
  const size_t m = size_t(std::find(methods.begin(), methods.end(), method) - methods.begin());
  return m < methods.size() && subset < subsets.size() ? pk[m * subsets.size() + subset] : -1;
}

// "layer3/heads-c99/given" for the layer whose Pk on the dev documents is lowest (ties: the
// earlier layer); "" when the store has no layer methods.
std::string SegmentTable::best_layer_method(const std::string& method, int64_t layers) const {
  std::string best;
  double best_pk = 2;
  for (int64_t l = 0; l < layers; ++l) {
    const std::string name = "layer" + std::to_string(l) + "/" + method;
    const double p = pk_of(name, dev);
    if (p >= 0 && p < best_pk) best_pk = p, best = name;
  }
  return best;
}

namespace {

std::string percent(double v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%5.1f", 100 * v);
  return buf;
}

}  // namespace

void print_segment_summary(const SegmentResults& r, std::ostream& out) {
  const SegmentTable t = segment_table(r);
  const SegmentLayout& l = r.layout;
  const size_t S = t.subsets.size();
  out << "segmentation: " << l.documents << " test documents of " << l.segments << " segments; model " << r.model_path << " (" << l.layers
      << " layers, " << l.heads << " heads)\n";
  out << "each model method at the layer with the lowest Pk on the dev documents; Pk and WindowDiff in %, means over documents\n";
  std::string header = "  method                                 ";
  for (size_t s = 0; s < S; ++s)
    if (s != t.dev) header += "  " + t.subsets[s] + " (" + std::to_string(t.documents[s]) + ")";
  out << header << "\n";
  std::vector<std::string> rows;
  for (const auto& m : t.methods)
    if (m.compare(0, 5, "layer") != 0) rows.push_back(m);
  for (const char* m :
       {"heads-depth/given", "heads-depth/estimated", "heads-c99/given", "heads-c99/estimated", "attention/given", "attention/estimated"})
    if (const std::string best = t.best_layer_method(m, l.layers); !best.empty()) rows.push_back(best);
  for (const auto& m : rows) {
    const size_t i = size_t(std::find(t.methods.begin(), t.methods.end(), m) - t.methods.begin());
    char name[48];
    std::snprintf(name, sizeof name, "  %-38s", m.c_str());
    out << name;
    for (size_t s = 0; s < S; ++s)
      if (s != t.dev) out << "  Pk " << percent(t.pk[i * S + s]) << " WD " << percent(t.window_diff[i * S + s]);
    out << "\n";
  }
  const size_t first = t.first_test();  // Choi's 3-11
  out << "Pk (%) by layer on " << t.subsets[first] << ", gold count:   heads-depth  heads-c99  attention\n";
  for (int64_t layer = 0; layer < l.layers; ++layer) {
    const std::string p = "layer" + std::to_string(layer) + "/";
    out << "  layer " << layer << "                                   " << percent(t.pk_of(p + "heads-depth/given", first)) << "      "
        << percent(t.pk_of(p + "heads-c99/given", first)) << "      " << percent(t.pk_of(p + "attention/given", first)) << "\n";
  }
  std::vector<size_t> order(size_t(l.layers * l.heads));
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t.head_pk[a * S + t.dev] < t.head_pk[b * S + t.dev]; });
  out << "heads that segment best (C99 on one head's similarity, gold count; Pk % on dev, then " << t.subsets[first] << "):";
  for (size_t k = 0; k < std::min<size_t>(5, order.size()); ++k)
    out << " L" << order[k] / size_t(l.heads) << "H" << order[k] % size_t(l.heads) << " " << percent(t.head_pk[order[k] * S + t.dev]) << "/"
        << percent(t.head_pk[order[k] * S + first]);
  out << "\n";
}

}  // namespace ctxsim
