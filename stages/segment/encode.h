// A document's sentences through an encoder (stages/model/encoder.h), in the overlapping windows
// of windows.h: per layer and head the mean of each sentence's context vectors (its tokens' o_i,
// SPEC §2, in its home window), and per layer the attention across each gap between sentences.
// The study's object lifted to sentences: the mean over token pairs of o_i · o_j between two
// sentences is the dot product of their mean vectors. No MPI, no HDF5.
#pragma once
#include <cstdint>
#include <vector>

#include "stages/model/encoder.h"
#include "stages/segment/windows.h"
#include "stages/text/frame.h"

namespace ctxsim::segment {

struct EncodedDocument {
  int64_t L = 0, H = 0, S = 0, d = 0;
  std::vector<double> pooled;  // [L, H, S, d] mean context vector of each sentence
  std::vector<double> cross;   // [L, S-1] attention across gap g (between sentences g-1 and g)
  int32_t cut_sentences = 0;   // sentences longer than T - 2 tokens (cut)

  // [S, S] row-major similarity of head h of layer l (h = -1: the layer, summed over its heads).
  std::vector<double> similarity(int64_t l, int64_t h) const;
};

// sentences: token ids (without the frame's); T: window length (at most the model's positions);
// frame: the family's begin, end (if any) and pad tokens around each window;
// batch: windows per forward. Cross attention of gap g: in the window holding both sentences
// where the gap is most central, the mean over the heads of the attention mass the tokens of each
// side put on the other's tokens (mean over query tokens, both directions averaged); a gap that
// no window holds whole (only after a lone over-long sentence) gets the mean of the others.
EncodedDocument encode_document(const Encoder& encoder, const std::vector<std::vector<int32_t>>& sentences, int32_t T,
                                const SampleFrame& frame, int64_t batch);

}  // namespace ctxsim::segment
