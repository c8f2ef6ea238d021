// The data side of masked-language-model pretraining, every draw a pure function of (seed,
// position), so that any rank count, a resume or a test sees the same: which window the g-th
// training sample is, BERT's masking of a sample, counter-based dropout masks, and the unigram
// baseline a model must beat. No LibTorch, MPI or HDF5.
#pragma once
#include <cstdint>
#include <vector>

namespace ctxsim {

// A key for an independent random stream, from a parent key and an index (SplitMix64's
// finaliser over their combination): mix_key(mix_key(seed, step), row), …
uint64_t mix_key(uint64_t key, uint64_t index);

// The training samples in order: the g-th sample (g = step × batch_size + row, counting on
// across epochs) is window order[g mod n] of the permutation of epoch g / n, a Fisher–Yates
// shuffle of 0…n-1 by SplitMix64(mix_key(seed, epoch)).
class SampleOrder {
 public:
  SampleOrder(int64_t windows, uint64_t seed);
  int64_t window(int64_t g);  // keeps the last epoch's permutation
  int64_t windows() const { return n_; }

 private:
  int64_t n_;
  uint64_t seed_;
  int64_t epoch_ = -1;
  std::vector<int64_t> order_;
};

struct MaskSpec {
  double fraction = 0.15;            // share of the maskable tokens that are predicted
  int32_t mask_id = -1;              // [MASK]
  int32_t vocab_size = 0;            // random replacements are drawn from 0…vocab_size-1 …
  std::vector<int32_t> special_ids;  // … except these, which are also never predicted ([PAD] [UNK] [CLS] [SEP] [MASK])
};

// BERT's masking of one sample of T positions, n_valid of them valid: of its m maskable tokens
// (valid and not special), k = max(1, round(fraction × m)) are predicted, chosen by a seeded
// shuffle; each becomes [MASK] (80%), a random non-special token (10%) or stays (10%).
// input [T] receives the model's input, labels [T] the original id at predicted positions and -1
// elsewhere; returns k (0 when m = 0). The same key gives the same masks.
int32_t mask_sample(const int32_t* ids, int32_t T, int32_t n_valid, const MaskSpec& spec, uint64_t key, int32_t* input, int32_t* labels);

// Inverted dropout: out[i] = 0 with probability p, else 1 / (1 - p), from a counter-based stream
// of `key` (16 bits of randomness per element, p rounded to 1/65536): the same key gives the
// same mask wherever and however it is computed.
void fill_dropout_mask(float* out, int64_t n, double p, uint64_t key);

// A model that ignores the context: each token's frequency in the training text. Its loss and
// accuracy on the held-out masked positions are what pretraining must beat.
struct UnigramBaseline {
  std::vector<double> log_prob;  // [V], add-one smoothed over the non-special ids (specials: -inf)
  int32_t top_id = -1;           // the most frequent token: the baseline's prediction everywhere
  // Mean cross-entropy (nats) and accuracy over the predicted positions of labels (-1 = none).
  double loss(const std::vector<int32_t>& labels) const;
  double accuracy(const std::vector<int32_t>& labels) const;
};
UnigramBaseline unigram_baseline(const std::vector<int64_t>& counts, const std::vector<int32_t>& special_ids);

}  // namespace ctxsim
