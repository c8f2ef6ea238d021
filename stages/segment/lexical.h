// The lexical side of the segmentation baselines: term-frequency vectors of sentences (token ids
// minus a stop set), their cosine similarities, and TextTiling and C99 built on them. Sparse:
// a sorted (id, count) list per sentence, never a vocabulary-sized vector.
#pragma once
#include <cstdint>
#include <vector>

#include "stages/segment/similarity_methods.h"

namespace ctxsim::segment {

// A sentence as token ids (WordPiece ids), without [CLS]/[SEP] unless the stop set drops them.
using TokenIds = std::vector<int32_t>;

// Term counts of one text span, sorted by id, stop ids left out.
struct TermCounts {
  std::vector<int32_t> ids;     // ascending, distinct
  std::vector<int32_t> counts;  // counts[j] of ids[j], >= 1
  double norm = 0;              // Euclidean norm of the counts
};

// stop_ids: ids never counted (special ids, punctuation, …), in any order, repeats allowed.
TermCounts term_counts(const TokenIds& tokens, const std::vector<int32_t>& stop_ids);
// The counts of several spans added together (a block of sentences, as TextTiling pools them).
TermCounts pooled_counts(const std::vector<TermCounts>& parts);
// Cosine of two count vectors; 0 when either is empty (a sentence of stop ids only).
double cosine(const TermCounts& a, const TermCounts& b);

// [n, n] row-major cosine similarity of the sentences' term counts. The diagonal is 1, except
// for a sentence with no counted token, whose row and column are all 0.
std::vector<double> lexical_similarity(const std::vector<TokenIds>& sentences, const std::vector<int32_t>& stop_ids);

// Hearst's own gap score: the cosine of the pooled counts of the w sentences before gap g and
// the w after it (clipped at the edges). Returns [n-1]. block_comparison on lexical_similarity
// averages the pairs' cosines instead; the two differ when sentences differ in length.
std::vector<double> lexical_gap_scores(const std::vector<TokenIds>& sentences, const std::vector<int32_t>& stop_ids, int32_t window);

// TextTiling (Hearst 1997) on sentences: lexical_gap_scores → boundaries_from_gap_scores.
Boundaries texttiling(const std::vector<TokenIds>& sentences, const std::vector<int32_t>& stop_ids, const BlockOptions& o,
                      int32_t count = kEstimate);

// C99 (Choi 2000): lexical_similarity → c99.
Boundaries c99_lexical(const std::vector<TokenIds>& sentences, const std::vector<int32_t>& stop_ids, const C99Options& o,
                       int32_t count = kEstimate);

}  // namespace ctxsim::segment
