// stages/mlm: the MLM model's gradients against finite differences, overfitting a few samples,
// AdamW against hand-computed updates, the learning-rate schedule, the exported layout.
#include "stages/model/mlm.h"

#include <gtest/gtest.h>

#include <c10/core/InferenceMode.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "stages/base/error.h"
#include "stages/model/model.h"
#include "stages/model/random_checkpoint.h"
#include "stages/text/pretraining_data.h"
#include "test_helpers.h"

namespace ctxsim {
namespace {

ModelConfig tiny() {
  ModelConfig c;
  c.vocab_size = 40;
  c.hidden_size = 16;
  c.num_layers = 2;
  c.num_heads = 2;
  c.intermediate_size = 24;
  c.max_position_embeddings = 12;
  return c;
}

// B samples of T = 10 (the second with 3 [PAD]) with the masks of stages/pretraining_data.
struct Samples {
  int64_t B = 0, T = 10;
  std::vector<int32_t> input, labels;
  std::vector<int16_t> n_valid;
  MlmBatch batch(uint64_t dropout_seed = 0) const {
    std::vector<uint64_t> keys;
    for (int64_t b = 0; b < B; ++b) keys.push_back(mix_key(dropout_seed, uint64_t(b)));
    return make_mlm_batch(input.data(), labels.data(), n_valid.data(), B, T, keys);
  }
};
Samples make_samples(int64_t B, double fraction, uint64_t seed) {
  Samples s;
  s.B = B;
  MaskSpec m;
  m.fraction = fraction;
  m.mask_id = 4;
  m.vocab_size = 40;
  m.special_ids = {0, 1, 2, 3, 4};
  for (int64_t b = 0; b < B; ++b) {
    const int16_t n = b % 2 ? 7 : 10;
    std::vector<int32_t> ids(10, 0);
    ids[0] = 2;
    for (int t = 1; t < n - 1; ++t) ids[size_t(t)] = 5 + int32_t(mix_key(seed, uint64_t(b * 10 + t)) % 35);
    ids[size_t(n - 1)] = 3;
    std::vector<int32_t> in(10), lab(10);
    mask_sample(ids.data(), 10, n, m, mix_key(seed + 1, uint64_t(b)), in.data(), lab.data());
    s.input.insert(s.input.end(), in.begin(), in.end());
    s.labels.insert(s.labels.end(), lab.begin(), lab.end());
    s.n_valid.push_back(n);
  }
  return s;
}

// Autograd's gradient of the loss (with dropout, whose masks are fixed by the keys) against
// central differences, in float64, on coordinates of every kind of parameter.
void check_gradients(double dropout) {
  MlmModel model(tiny(), at::kDouble);
  model.init(3);
  // Larger weights than BERT's 0.02 so that every path carries signal.
  model.parameters().mul_(10.0);
  const Samples s = make_samples(3, 0.4, 11);
  const MlmBatch batch = s.batch(5);
  model.gradients().zero_();
  const MlmResult r = model.train_step(batch, dropout, 1.0);
  ASSERT_GT(r.predicted, 2);
  const at::Tensor analytic = model.gradients().clone();
  const auto loss_at = [&](int64_t i, double delta) {
    const double saved = model.parameters()[i].item<double>();
    model.parameters()[i] = saved + delta;
    const double loss = model.train_step(batch, dropout, 1.0).loss_sum;
    model.parameters()[i] = saved;
    return loss;
  };
  int checked = 0;
  for (const auto& p : model.layout()) {
    for (int64_t j : {int64_t(0), p.numel / 2, p.numel - 1}) {
      const int64_t i = p.offset + j;
      const double h = 1e-6;
      const double numeric = (loss_at(i, h) - loss_at(i, -h)) / (2 * h);
      const double g = analytic[i].item<double>();
      EXPECT_NEAR(g, numeric, 1e-6 + 1e-5 * std::abs(numeric)) << p.name << "[" << j << "] dropout " << dropout;
      ++checked;
    }
  }
  EXPECT_EQ(checked, int(3 * model.layout().size()));
  EXPECT_GT(analytic.abs().max().item<double>(), 1e-3);
}

TEST(MlmGradients, EqualFiniteDifferencesWithoutDropout) { check_gradients(0.0); }
TEST(MlmGradients, EqualFiniteDifferencesWithFixedDropoutMasks) { check_gradients(0.2); }

// SPEC §8's head gates. ξ = 1 is the forward without gates, bit for bit; ξ_{l,h} = 0 is the model
// whose head h of layer l has zero value weights (its context vectors are 0); the gradient of each
// sample's loss with respect to its own gates equals central differences in float64 (1e-6 relative).
TEST(HeadGates, OnesAreTheUngatedForwardAndZeroRemovesTheHead) {
  MlmModel model(tiny(), at::kDouble);
  model.init(4);
  model.parameters().mul_(10.0);
  const Samples s = make_samples(3, 0.4, 12);
  const MlmBatch batch = s.batch();
  const MlmResult plain = model.evaluate(batch);
  const at::Tensor ones = at::ones({3, 2, 2}, at::kDouble);
  const GatedMlm gated = model.evaluate_gated(batch, ones, false, true);
  double sum = 0;
  for (double l : gated.loss) sum += l;
  EXPECT_NEAR(sum, plain.loss_sum, 1e-12 * std::abs(plain.loss_sum));
  int64_t correct = 0, predicted = 0;
  for (size_t b = 0; b < 3; ++b) correct += gated.correct[b], predicted += gated.predicted[b];
  EXPECT_EQ(correct, plain.correct);
  EXPECT_EQ(predicted, plain.predicted);
  // The entropy of a head's attention lies between 0 and ln(valid keys).
  EXPECT_GT(gated.entropy.min().item<double>(), 0.0);
  EXPECT_LE(gated.entropy.max().item<double>(), std::log(10.0) + 1e-12);
  // Gates of one are the same bits as none, in the analysis encoder too.
  const at::Tensor ids = batch.input, valid = batch.valid;
  std::vector<at::Tensor> ungated, unit;
  std::map<std::string, at::Tensor> tensors;
  for (const auto& p : model.layout())
    if (p.name.compare(0, 5, "bert.") == 0) tensors[p.name.substr(5)] = model.parameter(p.name).clone();
  tensors["pooler.dense.weight"] = at::zeros({16, 16}, at::kDouble);
  tensors["pooler.dense.bias"] = at::zeros({16}, at::kDouble);
  const TransformerEncoder enc = TransformerEncoder::from_tensors(tiny(), tensors, at::kDouble);
  LayerRequest gates_one;
  gates_one.gates = at::ones({2, 2}, at::kDouble);
  EXPECT_TRUE(at::equal(enc.forward(ids, valid), enc.forward(ids, valid, gates_one)));
  // ξ_{1,0} = 0 for sample 1 only: sample 1 as the model without head 0's values in layer 1.
  at::Tensor gates = ones.clone();
  gates[1][1][0] = 0.0;
  const GatedMlm removed = model.evaluate_gated(batch, gates, false, false);
  EXPECT_EQ(removed.loss[0], gated.loss[0]);
  EXPECT_EQ(removed.loss[2], gated.loss[2]);
  EXPECT_NE(removed.loss[1], gated.loss[1]);
  model.parameter("bert.encoder.layer.1.attention.self.value.weight").narrow(0, 0, 8).zero_();
  model.parameter("bert.encoder.layer.1.attention.self.value.bias").narrow(0, 0, 8).zero_();
  const GatedMlm zeroed = model.evaluate_gated(batch, ones, false, false);
  EXPECT_NEAR(zeroed.loss[1], removed.loss[1], 1e-12 * std::abs(removed.loss[1]));
}

// Pruning's shortcut: an evaluation whose gates equal the full model's below layer l starts at
// layer l from the full model's layer inputs, with the same bits as from the embeddings; from L it
// is the head alone (the full model). In float32, where a different order of operations would show.
TEST(HeadGates, StartingAtALayerFromTheFullModelsInputsIsTheSameBits) {
  MlmModel model(tiny(), at::kFloat);
  model.init(6);
  model.parameters().mul_(10.0);
  const Samples s = make_samples(3, 0.4, 14);
  const MlmBatch batch = s.batch();
  const at::Tensor ones = at::ones({3, 2, 2}, at::kDouble);
  const std::vector<at::Tensor> inputs = model.layer_inputs(batch, ones);
  ASSERT_EQ(inputs.size(), 3u);  // layers 0 and 1, and the last layer's output
  const auto same = [](const GatedMlm& a, const GatedMlm& b) {
    return a.loss == b.loss && a.correct == b.correct && a.predicted == b.predicted;
  };
  const GatedMlm full = model.evaluate_gated(batch, ones, false, false);
  EXPECT_TRUE(same(model.evaluate_gated_from(batch, ones, 2, inputs[2]), full));
  for (int64_t l = 0; l < 2; ++l)
    for (int64_t k = 0; k < 2; ++k) {
      at::Tensor gates = ones.clone();
      gates.select(1, l).select(1, k).zero_();
      const GatedMlm whole = model.evaluate_gated(batch, gates, false, false);
      EXPECT_TRUE(same(model.evaluate_gated_from(batch, gates, l, inputs[size_t(l)]), whole)) << "layer " << l << " head " << k;
      if (l == 1) { EXPECT_NE(whole.loss, full.loss); }
    }
}

// An evaluation's decoder is one product into a buffer kept between calls; a training step's (with
// gradients) goes chunk by chunk. Their losses per sample are the same bits (BERT's decoder with a
// bias, Llama's without), with a vocabulary large enough for four chunks, across calls of other
// row counts (the buffer reused), in float64
// and float32 (where OpenBLAS runs its AVX2 kernels, which round a row by the rows in its call,
// float32 only agrees to 1e-6).
TEST(HeadGates, AnEvaluationsDecoderInOneProductIsTheChunkedOnesBits) {
  const bool avx2_kernels = test::openblas_avx2_kernels();
  for (const char* family : {"bert", "llama"})  // the decoder with a bias (addmm) and without (mm)
    for (const at::ScalarType dtype : {at::kDouble, at::kFloat}) {
      ModelConfig c = ModelConfig::preset("bert-tiny", family_named(family));
      c.vocab_size = 60000;  // float32: chunks of 104 rows
      c.hidden_size = 16, c.num_heads = 2, c.num_layers = 2, c.intermediate_size = 24, c.max_position_embeddings = 12;
      MlmModel model(c, dtype);
      model.init(7);
      const Samples big = make_samples(60, 0.9, 21), small = make_samples(5, 0.4, 22);
      const int64_t B = big.B;
      const at::Tensor ones = at::ones({B, 2, 2}, at::kDouble);
      const GatedMlm chunked = model.evaluate_gated(big.batch(), ones, true, false);
      ASSERT_GT(std::accumulate(chunked.predicted.begin(), chunked.predicted.end(), int64_t(0)), 3 * 104);  // 4 chunks, 7 in float64
      // The buffer: allocated, then a call of fewer rows in a larger buffer, one in InferenceMode
      // (an inference tensor is written only there: a buffer of its own), then the first kind again.
      std::vector<GatedMlm> whole;
      whole.push_back(model.evaluate_gated(big.batch(), ones, false, false));
      model.evaluate_gated(small.batch(), at::ones({small.B, 2, 2}, at::kDouble), false, false);
      {
        const c10::InferenceMode inference;
        whole.push_back(model.evaluate_gated(big.batch(), ones, false, false));
      }
      whole.push_back(model.evaluate_gated(big.batch(), ones, false, false));
      for (const GatedMlm& w : whole) {
        EXPECT_EQ(w.correct, chunked.correct);
        EXPECT_EQ(w.predicted, chunked.predicted);
        if (dtype == at::kFloat && avx2_kernels) {
          for (int64_t b = 0; b < B; ++b) EXPECT_NEAR(w.loss[size_t(b)], chunked.loss[size_t(b)], 1e-6 * std::abs(chunked.loss[size_t(b)]));
        } else {
          EXPECT_EQ(w.loss, chunked.loss) << family << " " << c10::toString(dtype);
        }
      }
    }
}

TEST(HeadGates, GradientsEqualFiniteDifferences) {
  MlmModel model(tiny(), at::kDouble);
  model.init(5);
  model.parameters().mul_(10.0);
  const Samples s = make_samples(3, 0.4, 13);
  const MlmBatch batch = s.batch();
  const at::Tensor ones = at::ones({3, 2, 2}, at::kDouble);
  const GatedMlm g = model.evaluate_gated(batch, ones, true, false);
  ASSERT_TRUE(g.gate_grad.defined());
  EXPECT_GT(g.gate_grad.abs().max().item<double>(), 1e-3);
  const double h = 1e-6;
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t k = 0; k < 2; ++k) {
        at::Tensor up = ones.clone(), down = ones.clone();
        up[b][l][k] = 1 + h;
        down[b][l][k] = 1 - h;
        const double numeric = (model.evaluate_gated(batch, up, false, false).loss[size_t(b)] -
                                model.evaluate_gated(batch, down, false, false).loss[size_t(b)]) /
                               (2 * h);
        const double analytic = g.gate_grad[b][l][k].item<double>();
        EXPECT_NEAR(analytic, numeric, 1e-6 * std::max(1.0, std::abs(numeric))) << "sample " << b << " layer " << l << " head " << k;
      }
}

// A BertForMaskedLM folder as pretrain writes it loads back to the same parameters; without its
// head it is refused, naming the file.
TEST(MlmLoad, ExportedFolderLoadsBackAndAHeadlessOneIsRefused) {
  const auto dir = std::filesystem::temp_directory_path() / ("ctxsim_mlm_load_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  MlmModel model(tiny(), at::kFloat);
  model.init(6);
  auto tensors = model.export_tensors(DType::F32);
  write_safetensors((dir / "model.safetensors").string(), tensors, {{"format", "pt"}});
  std::ofstream((dir / "config.json").string()) << tiny().to_json("BertForMaskedLM");
  const MlmModel back = MlmModel::load(dir.string(), at::kFloat);
  EXPECT_TRUE(at::equal(back.parameters(), model.parameters()));
  for (auto it = tensors.begin(); it != tensors.end();) it = it->first.compare(0, 4, "cls.") == 0 ? tensors.erase(it) : std::next(it);
  write_safetensors((dir / "model.safetensors").string(), tensors, {{"format", "pt"}});
  try {
    MlmModel::load(dir.string(), at::kFloat);
    ADD_FAILURE() << "a checkpoint without its masked-LM head loaded";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("has no BERT language-model head"), std::string::npos) << e.what(); }
  std::filesystem::remove_all(dir);
}

TEST(MlmTraining, OverfitsEightFixedSamples) {
  MlmModel model(tiny(), at::kFloat);
  model.init(1);
  const Samples s = make_samples(8, 0.3, 21);
  const MlmBatch batch = s.batch();
  AdamWState state = adamw_state(model.parameters());
  const at::Tensor decay = model.decay_mask();
  double first = 0, last = 0;
  int64_t correct = 0, predicted = 0;
  for (int step = 0; step < 300; ++step) {
    model.gradients().zero_();
    const MlmResult r = model.train_step(batch, 0.0, 1.0 / double(batch.positions.numel()));
    if (step == 0) first = r.loss_sum / double(r.predicted);
    last = r.loss_sum / double(r.predicted);
    correct = r.correct;
    predicted = r.predicted;
    clip_grad_norm(model.gradients(), 1.0);
    adamw_update(model.parameters(), model.gradients(), decay, state, 3e-3, AdamWOptions{});
  }
  EXPECT_NEAR(first, std::log(40.0), 0.3);  // a fresh model guesses uniformly
  EXPECT_LT(last, 0.05) << "first " << first;
  EXPECT_EQ(correct, predicted);
  EXPECT_EQ(model.evaluate(batch).correct, predicted);
}

TEST(AdamW, HandComputedFirstAndSecondUpdates) {
  at::Tensor p = at::tensor({1.0, -2.0, 0.5}, at::kDouble);
  const at::Tensor g = at::tensor({0.1, 0.2, -0.3}, at::kDouble);
  const at::Tensor decay = at::tensor({1.0, 1.0, 0.0}, at::kDouble);
  AdamWState s = adamw_state(p);
  const AdamWOptions o{0.9, 0.999, 1e-8, 0.1};
  adamw_update(p, g, decay, s, 0.01, o);
  // Step 1: m̂ = g, v̂ = g², so the step is lr · g/|g| (plus eps), after decay p -= lr·wd·p.
  const double expect0 = 1.0 - 0.01 * 0.1 * 1.0 - 0.01 * 0.1 / (0.1 + 1e-8);
  const double expect2 = 0.5 + 0.01 * 0.3 / (0.3 + 1e-8);
  EXPECT_NEAR(p[0].item<double>(), expect0, 1e-12);
  EXPECT_NEAR(p[2].item<double>(), expect2, 1e-12);
  adamw_update(p, g, decay, s, 0.01, o);
  // Step 2 with the same gradient: m̂ = g and v̂ = g² again.
  EXPECT_NEAR(p[2].item<double>(), expect2 + 0.01 * 0.3 / (0.3 + 1e-8), 1e-12);
  EXPECT_EQ(s.steps, 2);
}

TEST(Schedule, WarmupThenLinearDecayAndClipping) {
  EXPECT_DOUBLE_EQ(learning_rate(0, 100, 10, 1.0), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(9, 100, 10, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate(10, 100, 10, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate(55, 100, 10, 1.0), 0.5);
  EXPECT_DOUBLE_EQ(learning_rate(99, 100, 10, 1.0), 1.0 / 90);
  at::Tensor g = at::tensor({3.0, 4.0}, at::kDouble);
  EXPECT_DOUBLE_EQ(clip_grad_norm(g, 1.0), 5.0);
  EXPECT_NEAR(g.norm().item<double>(), 1.0, 1e-6);
  EXPECT_NEAR(clip_grad_norm(g, 0), 1.0, 1e-6);
}

TEST(MlmLayout, HuggingFaceNamesTiedDecoderAndInitEqualToInitModel) {
  MlmModel model(tiny(), at::kFloat);
  model.init(9);
  const auto tensors = model.export_tensors(DType::F32);
  EXPECT_EQ(tensors.count("bert.embeddings.word_embeddings.weight"), 1u);
  EXPECT_EQ(tensors.count("cls.predictions.transform.dense.weight"), 1u);
  EXPECT_EQ(tensors.count("cls.predictions.transform.LayerNorm.bias"), 1u);
  EXPECT_EQ(tensors.count("cls.predictions.bias"), 1u);
  EXPECT_EQ(tensors.count("cls.predictions.decoder.weight"), 0u);  // tied to the word embeddings
  EXPECT_EQ(tensors.count("bert.pooler.dense.weight"), 0u);        // BertForMaskedLM has no pooler
  // The encoder starts exactly where `ctxsim init-model --seed 9` does.
  const auto init = random_checkpoint_weights(tiny(), 9);
  for (const auto& [name, t] : init) {
    if (name.rfind("pooler.", 0) == 0) continue;
    EXPECT_EQ(tensors.at("bert." + name).bytes, t.bytes) << name;
  }
  const auto half = model.export_tensors(DType::F16);
  EXPECT_EQ(half.at("cls.predictions.bias").bytes.size(), 2u * 40);
  // Decay on weights only.
  for (const auto& p : model.layout())
    EXPECT_EQ(p.decays, p.name.find("bias") == std::string::npos && p.name.find("LayerNorm") == std::string::npos) << p.name;
}

}  // namespace
}  // namespace ctxsim
