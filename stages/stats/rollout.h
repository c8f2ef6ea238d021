// Attention rollout (Abnar & Zuidema 2020): average the heads of each layer, add the identity
// for the residual stream, renormalise rows, and multiply through the layers. Plain vectors, no
// LibTorch: it runs on the float16 example matrices a store keeps.
#pragma once
#include <vector>

namespace ctxsim {

// attention: [L, H, T, T] row-major; the first n_valid positions are used (the rest is [PAD]).
// Returns the rollout [n_valid, n_valid] after the last layer: R = Â_L · … · Â_1 with
// Â_l = rownorm(mean_h A_l + I).
std::vector<double> attention_rollout(const std::vector<float>& attention, int layers, int heads, int seq_len, int n_valid);

// Relevance of each token for position `row`: that row of the rollout (an encoder's [CLS] is
// row 0; a causal model's last token, the only one that sees them all, is row n_valid - 1).
std::vector<double> rollout_row(const std::vector<double>& rollout, int n_valid, int row);

}  // namespace ctxsim
