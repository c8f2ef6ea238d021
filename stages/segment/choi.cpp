// Choi's benchmark (SPEC §6): the draw, its preconditions and the gold boundaries.
#include "stages/segment/choi.h"

#include <algorithm>
#include <unordered_set>

#include "stages/base/error.h"
#include "stages/base/random.h"

namespace ctxsim::segment {
namespace {

void validate_subset(const std::vector<EligibleDocument>& eligible, const ChoiSubset& s) {
  const std::string where = "Choi subset '" + s.name + "'";
  if (s.min_sentences < 1 || s.max_sentences < s.min_sentences)
    throw Error(where,
                "segment lengths " + std::to_string(s.min_sentences) + "…" + std::to_string(s.max_sentences) +
                    " are not a range of positive sentence counts",
                "give 1 <= min_sentences <= max_sentences, e.g. 3…11");
  if (s.documents < 0) throw Error(where, "asked for " + std::to_string(s.documents) + " test documents", "ask for 0 or more");
  std::unordered_set<int32_t> seen;
  int64_t long_enough = 0;
  for (const auto& d : eligible) {
    CTXSIM_CHECK(seen.insert(d.document).second, "document " + std::to_string(d.document) + " listed twice");
    long_enough += d.sentences >= s.max_sentences;
  }
  if (long_enough < kChoiSegments)
    throw Error(where,
                "only " + std::to_string(long_enough) + " of the " + std::to_string(eligible.size()) +
                    " documents in the chosen split have at least " + std::to_string(s.max_sentences) +
                    " sentences, and a test document needs " + std::to_string(kChoiSegments) + " distinct ones",
                "choose a corpus split with more documents (e.g. corpus.split: all) or a subset with shorter segments");
}

ChoiDocument draw_test_document(const std::vector<EligibleDocument>& eligible, const ChoiSubset& s, SplitMix64& rng) {
  ChoiDocument t;
  t.subset = s.name;
  std::vector<char> used(eligible.size(), 0);
  std::vector<size_t> fits;
  const auto span = static_cast<uint64_t>(s.max_sentences - s.min_sentences + 1);
  for (int32_t seg = 0; seg < kChoiSegments; ++seg) {
    const auto n = static_cast<int32_t>(s.min_sentences + static_cast<int32_t>(rng.next() % span));
    fits.clear();
    for (size_t j = 0; j < eligible.size(); ++j)
      if (!used[j] && eligible[j].sentences >= n) fits.push_back(j);
    // validate_subset guarantees kChoiSegments documents of max_sentences, so this never fails.
    CTXSIM_CHECK(!fits.empty(), "no unused document with " + std::to_string(n) + " sentences");
    const size_t pick = fits[static_cast<size_t>(rng.next() % fits.size())];
    used[pick] = 1;
    if (seg > 0) t.boundaries.push_back(t.total_sentences);
    t.segments.push_back({eligible[pick].document, n});
    t.total_sentences += n;
  }
  return t;
}

}  // namespace

std::vector<ChoiSubset> choi_standard_subsets() {
  return {{"3-11", 3, 11, 400}, {"3-5", 3, 5, 100}, {"6-8", 6, 8, 100}, {"9-11", 9, 11, 100}};
}

ChoiSubset choi_standard_subset(const std::string& name) {
  for (const auto& s : choi_standard_subsets())
    if (s.name == name) return s;
  throw Error("Choi subset '" + name + "'", "no such subset", "use one of 3-11, 3-5, 6-8, 9-11");
}

std::vector<ChoiDocument> choi_test_documents(const std::vector<EligibleDocument>& eligible, const ChoiSubset& subset, uint64_t seed) {
  validate_subset(eligible, subset);
  SplitMix64 rng(seed);
  std::vector<ChoiDocument> out;
  out.reserve(static_cast<size_t>(subset.documents));
  for (int32_t i = 0; i < subset.documents; ++i) out.push_back(draw_test_document(eligible, subset, rng));
  return out;
}

uint64_t choi_subset_seed(uint64_t seed, size_t index) {
  SplitMix64 rng(seed);
  uint64_t v = rng.next();
  for (size_t i = 0; i < index; ++i) v = rng.next();
  return v;
}

std::vector<ChoiDocument> choi_benchmark(const std::vector<EligibleDocument>& eligible, uint64_t seed,
                                         const std::vector<ChoiSubset>& subsets) {
  std::vector<ChoiDocument> out;
  for (size_t i = 0; i < subsets.size(); ++i) {
    auto docs = choi_test_documents(eligible, subsets[i], choi_subset_seed(seed, i));
    out.insert(out.end(), std::make_move_iterator(docs.begin()), std::make_move_iterator(docs.end()));
  }
  return out;
}

}  // namespace ctxsim::segment
