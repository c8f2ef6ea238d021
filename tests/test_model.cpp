// The BERT forward pass against a deliberately plain reference written here (explicit loops,
// textbook formulas, double precision) on a tiny seeded checkpoint; internal consistency,
// padding invariance, the projected vectors, key-name variants and loader errors.
#include "stages/base/digest.h"
#include "stages/model/model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "stages/base/error.h"
#include "stages/model/random_checkpoint.h"
#include "stages/model/safetensors.h"
#include "test_helpers.h"

namespace ctxsim {
namespace {

using Vec = std::vector<double>;

// ------------------------------------------------------------ the plain reference --------

struct RefWeights {
  ModelConfig c;
  std::map<std::string, Vec> w;
  const Vec& operator[](const std::string& n) const { return w.at(n); }
};

RefWeights read_reference_weights(const std::string& dir) {
  RefWeights r;
  r.c = ModelConfig::load(dir + "/config.json");
  SafetensorsFile f(dir + "/model.safetensors");
  for (const auto& [name, v] : f.tensors()) {
    Vec data(static_cast<size_t>(v.numel()));
    for (size_t i = 0; i < data.size(); ++i) {
      float x;
      std::memcpy(&x, v.data + 4 * i, 4);
      data[i] = x;
    }
    r.w[name] = std::move(data);
  }
  return r;
}

// y[t][o] = sum_i x[t][i] * W[o][i] + b[o]  (HF Linear: W is [out, in])
std::vector<Vec> linear(const std::vector<Vec>& x, const Vec& W, const Vec& b) {
  const size_t out = b.size(), in = x[0].size();
  std::vector<Vec> y(x.size(), Vec(out));
  for (size_t t = 0; t < x.size(); ++t)
    for (size_t o = 0; o < out; ++o) {
      double s = b[o];
      for (size_t i = 0; i < in; ++i) s += x[t][i] * W[o * in + i];
      y[t][o] = s;
    }
  return y;
}

std::vector<Vec> layer_norm(const std::vector<Vec>& x, const Vec& g, const Vec& b, double eps) {
  std::vector<Vec> y = x;
  for (auto& row : y) {
    double mean = 0, var = 0;
    for (double v : row) mean += v;
    mean /= double(row.size());
    for (double v : row) var += (v - mean) * (v - mean);
    var /= double(row.size());
    for (size_t i = 0; i < row.size(); ++i) row[i] = (row[i] - mean) / std::sqrt(var + eps) * g[i] + b[i];
  }
  return y;
}

struct RefLayer {
  std::vector<Vec> input;                   // [T][hidden]
  std::vector<std::vector<Vec>> context;    // [H][T][d]
  std::vector<std::vector<Vec>> attention;  // [H][T][T]
};

// One sample: ids of length T, the first n_valid valid.
std::vector<Vec> reference_forward(const RefWeights& R, const std::vector<int64_t>& ids, int n_valid, std::vector<RefLayer>* layers) {
  const auto& c = R.c;
  const size_t T = ids.size(), Hd = size_t(c.hidden_size), H = size_t(c.num_heads), d = size_t(c.head_dim());
  std::vector<Vec> x(T, Vec(Hd));
  for (size_t t = 0; t < T; ++t)
    for (size_t i = 0; i < Hd; ++i)
      x[t][i] = R["embeddings.word_embeddings.weight"][size_t(ids[t]) * Hd + i] + R["embeddings.position_embeddings.weight"][t * Hd + i] +
                R["embeddings.token_type_embeddings.weight"][i];
  x = layer_norm(x, R["embeddings.LayerNorm.weight"], R["embeddings.LayerNorm.bias"], c.layer_norm_eps);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    const auto q = linear(x, R[p + "attention.self.query.weight"], R[p + "attention.self.query.bias"]);
    const auto k = linear(x, R[p + "attention.self.key.weight"], R[p + "attention.self.key.bias"]);
    const auto v = linear(x, R[p + "attention.self.value.weight"], R[p + "attention.self.value.bias"]);
    RefLayer L;
    L.input = x;
    L.context.assign(H, std::vector<Vec>(T, Vec(d, 0.0)));
    L.attention.assign(H, std::vector<Vec>(T, Vec(T, 0.0)));
    std::vector<Vec> merged(T, Vec(Hd));
    for (size_t h = 0; h < H; ++h) {
      for (size_t i = 0; i < T; ++i) {
        // softmax over valid keys only; [PAD] keys get exactly zero
        Vec s(T, -INFINITY);
        double mx = -INFINITY;
        for (size_t j = 0; j < size_t(n_valid); ++j) {
          double dot = 0;
          for (size_t e = 0; e < d; ++e) dot += q[i][h * d + e] * k[j][h * d + e];
          s[j] = dot / std::sqrt(double(d));
          mx = std::max(mx, s[j]);
        }
        double z = 0;
        for (size_t j = 0; j < size_t(n_valid); ++j) z += std::exp(s[j] - mx);
        for (size_t j = 0; j < size_t(n_valid); ++j) L.attention[h][i][j] = std::exp(s[j] - mx) / z;
        for (size_t e = 0; e < d; ++e) {
          double o = 0;
          for (size_t j = 0; j < T; ++j) o += L.attention[h][i][j] * v[j][h * d + e];
          L.context[h][i][e] = o;
          merged[i][h * d + e] = o;
        }
      }
    }
    auto a = linear(merged, R[p + "attention.output.dense.weight"], R[p + "attention.output.dense.bias"]);
    for (size_t t = 0; t < T; ++t)
      for (size_t i = 0; i < Hd; ++i) a[t][i] += x[t][i];
    a = layer_norm(a, R[p + "attention.output.LayerNorm.weight"], R[p + "attention.output.LayerNorm.bias"], c.layer_norm_eps);
    auto inter = linear(a, R[p + "intermediate.dense.weight"], R[p + "intermediate.dense.bias"]);
    for (auto& row : inter)
      for (auto& u : row) u = 0.5 * u * (1.0 + std::erf(u / std::sqrt(2.0)));
    auto out = linear(inter, R[p + "output.dense.weight"], R[p + "output.dense.bias"]);
    for (size_t t = 0; t < T; ++t)
      for (size_t i = 0; i < Hd; ++i) out[t][i] += a[t][i];
    x = layer_norm(out, R[p + "output.LayerNorm.weight"], R[p + "output.LayerNorm.bias"], c.layer_norm_eps);
    if (layers) layers->push_back(std::move(L));
  }
  return x;
}

// ------------------------------------------------------------------- fixtures ------------

std::string small_vocab(const test::TempDir& dir) {
  std::string v = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
  for (int i = 0; i < 59; ++i) v += "tok" + std::to_string(i) + "\n";
  return dir.write("vocab.txt", v);
}

// A tiny model (2 layers, hidden 32, 4 heads, ffn 64) written by init-model's code path, with
// LayerNorm and biases randomised too so that the test exercises every parameter.
std::string tiny_checkpoint(const test::TempDir& dir, uint64_t seed = 3) {
  ModelConfig c = ModelConfig::preset("bert-tiny");
  c.hidden_size = 32;
  c.num_heads = 4;
  c.intermediate_size = 64;
  c.max_position_embeddings = 64;
  const std::string out = (dir.path / "tiny").string();
  write_random_checkpoint(c, seed, small_vocab(dir), out);
  // Re-write with non-trivial biases and LayerNorm parameters.
  auto weights = random_checkpoint_weights(ModelConfig::load(out + "/config.json"), seed);
  uint64_t k = 1;
  for (auto& [name, t] : weights) {
    auto* f = reinterpret_cast<float*>(t.bytes.data());
    const size_t n = t.bytes.size() / 4;
    const bool bias = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    if (bias || name.find("LayerNorm") != std::string::npos)
      for (size_t i = 0; i < n; ++i) f[i] += 0.1f * float(std::sin(double(++k)));
  }
  // Larger embeddings make attention less uniform (a harder test than N(0, 0.02)).
  auto& emb = weights["embeddings.word_embeddings.weight"];
  auto* e = reinterpret_cast<float*>(emb.bytes.data());
  for (size_t i = 0; i < emb.bytes.size() / 4; ++i) e[i] *= 40.0f;
  write_safetensors(out + "/model.safetensors", weights);
  return out;
}

at::Tensor ids_tensor(const std::vector<std::vector<int64_t>>& rows) {
  const int64_t B = int64_t(rows.size()), T = int64_t(rows[0].size());
  at::Tensor t = at::empty({B, T}, at::kLong);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T; ++i) t[b][i] = rows[b][i];
  return t;
}

at::Tensor valid_tensor(const std::vector<int>& n_valid, int64_t T) {
  at::Tensor v = at::zeros({int64_t(n_valid.size()), T}, at::kBool);
  for (size_t b = 0; b < n_valid.size(); ++b) v[int64_t(b)].slice(0, 0, n_valid[b]).fill_(true);
  return v;
}

const std::vector<std::vector<int64_t>> kRows = {{2, 10, 11, 12, 13, 14, 15, 16, 17, 3, 0, 0}, {2, 30, 31, 30, 5, 6, 7, 8, 9, 20, 21, 3}};
const std::vector<int> kValid = {10, 12};

double max_abs_diff(const at::Tensor& t, const std::function<double(int64_t, int64_t, int64_t)>& ref, int64_t n0, int64_t n1, int64_t n2) {
  double m = 0;
  const at::Tensor c = t.to(at::kDouble).contiguous();
  const double* p = c.data_ptr<double>();
  for (int64_t a = 0; a < n0; ++a)
    for (int64_t b = 0; b < n1; ++b)
      for (int64_t e = 0; e < n2; ++e) m = std::max(m, std::abs(p[(a * n1 + b) * n2 + e] - ref(a, b, e)));
  return m;
}

// ---------------------------------------------------------------------- tests ------------

class TinyModel : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tiny_checkpoint(tmp_);
    ref_ = read_reference_weights(dir_);
  }
  void compare(at::ScalarType dtype, double tol) {
    const TransformerEncoder m = TransformerEncoder::load(dir_, dtype);
    const int64_t T = 12, H = m.config().num_heads, d = m.config().head_dim(), hidden = m.config().hidden_size;
    std::vector<std::vector<RefLayer>> ref_layers(2);
    std::vector<std::vector<Vec>> ref_out;
    for (int b = 0; b < 2; ++b) ref_out.push_back(reference_forward(ref_, kRows[b], kValid[b], &ref_layers[b]));
    int seen = 0;
    const at::Tensor out = m.forward(ids_tensor(kRows), valid_tensor(kValid, T), {}, [&](const LayerOutputs& o) {
      ++seen;
      for (int b = 0; b < 2; ++b) {
        const RefLayer& R = ref_layers[b][size_t(o.layer)];
        EXPECT_LT(max_abs_diff(
                      o.input[b], [&](int64_t t, int64_t i, int64_t) { return R.input[t][i]; }, T, hidden, 1),
                  tol)
            << "hidden input of layer " << o.layer;
        EXPECT_LT(max_abs_diff(
                      o.context[b], [&](int64_t h, int64_t i, int64_t e) { return R.context[h][i][e]; }, H, T, d),
                  tol)
            << "context of layer " << o.layer;
        EXPECT_LT(max_abs_diff(
                      o.attention[b], [&](int64_t h, int64_t i, int64_t j) { return R.attention[h][i][j]; }, H, T, T),
                  tol)
            << "attention of layer " << o.layer;
      }
    });
    EXPECT_EQ(seen, 2);
    for (int b = 0; b < 2; ++b)
      EXPECT_LT(max_abs_diff(
                    out[b], [&](int64_t t, int64_t i, int64_t) { return ref_out[b][t][i]; }, T, hidden, 1),
                tol);
  }
  test::TempDir tmp_;
  std::string dir_;
  RefWeights ref_;
};

TEST_F(TinyModel, MatchesPlainReferenceFloat32) { compare(at::kFloat, 1e-5); }
TEST_F(TinyModel, MatchesPlainReferenceFloat64) { compare(at::kDouble, 1e-10); }

TEST_F(TinyModel, AttentionBlockIsConsistent) {
  // concat(context) × W_O^T + b_O + X, then LayerNorm, reproduces the attention-block output.
  const TransformerEncoder m = TransformerEncoder::load(dir_, at::kDouble);
  const auto& c = m.config();
  m.forward(ids_tensor(kRows), valid_tensor(kValid, 12), {}, [&](const LayerOutputs& o) {
    const std::string p = "encoder.layer." + std::to_string(o.layer) + ".";
    const auto W = [&](const std::string& n) {
      const Vec& v = ref_.w.at(n);
      return at::tensor(std::vector<double>(v.begin(), v.end()), at::kDouble);
    };
    const at::Tensor merged = o.context.transpose(1, 2).reshape({2, 12, c.hidden_size});
    const at::Tensor Wo = W(p + "attention.output.dense.weight").view({c.hidden_size, c.hidden_size});
    const at::Tensor rebuilt =
        at::layer_norm(at::matmul(merged, Wo.t()) + W(p + "attention.output.dense.bias") + o.input, {c.hidden_size},
                       W(p + "attention.output.LayerNorm.weight"), W(p + "attention.output.LayerNorm.bias"), c.layer_norm_eps);
    EXPECT_LT((rebuilt - o.attention_output).abs().max().item<double>(), 1e-12);
  });
}

TEST_F(TinyModel, PaddingDoesNotChangeValidPositions) {
  const TransformerEncoder m = TransformerEncoder::load(dir_, at::kFloat);
  // Sample 0 has 10 valid tokens; run it alone at T=10 (no padding) and at T=12 (2 [PAD]).
  std::vector<int64_t> short_row(kRows[0].begin(), kRows[0].begin() + 10);
  std::vector<at::Tensor> ctx_short, ctx_long, att_long;
  m.forward(ids_tensor({short_row}), valid_tensor({10}, 10), {}, [&](const LayerOutputs& o) { ctx_short.push_back(o.context.clone()); });
  m.forward(ids_tensor({kRows[0]}), valid_tensor({10}, 12), {}, [&](const LayerOutputs& o) {
    ctx_long.push_back(o.context.clone());
    att_long.push_back(o.attention.clone());
  });
  for (size_t l = 0; l < ctx_short.size(); ++l) {
    EXPECT_LT((ctx_long[l].slice(2, 0, 10) - ctx_short[l]).abs().max().item<double>(), 1e-6);
    // Attention to [PAD] keys is exactly zero, from every query row.
    EXPECT_EQ(att_long[l].slice(3, 10, 12).abs().max().item<float>(), 0.0f);
    // Rows still sum to 1.
    EXPECT_LT((att_long[l].sum(-1) - 1).abs().max().item<float>(), 1e-6);
  }
}

TEST_F(TinyModel, ProjectedVectorsAreTheHeadsSliceOfWo) {
  const TransformerEncoder m = TransformerEncoder::load(dir_, at::kDouble);
  const auto& c = m.config();
  LayerRequest req;
  req.projected = true;
  int calls = 0;
  m.forward(ids_tensor(kRows), valid_tensor(kValid, 12), req, [&](const LayerOutputs& o) {
    ++calls;
    ASSERT_TRUE(o.projected.defined());
    const std::string p = "encoder.layer." + std::to_string(o.layer) + ".attention.output.dense.weight";
    const Vec& Wv = ref_.w.at(p);
    const at::Tensor Wo = at::tensor(std::vector<double>(Wv.begin(), Wv.end()), at::kDouble).view({c.hidden_size, c.hidden_size});
    const int64_t d = c.head_dim();
    for (int64_t h = 0; h < c.num_heads; ++h) {
      // o_i W_O[h]: the head's d input columns of W_O.
      const at::Tensor explicit_proj = at::matmul(o.context.select(1, h), Wo.slice(1, h * d, (h + 1) * d).t());
      EXPECT_LT((explicit_proj - o.projected.select(1, h)).abs().max().item<double>(), 1e-12);
    }
    // Sum over heads of the projections + bias is the attention output before residual and norm.
    const at::Tensor merged = o.context.transpose(1, 2).reshape({2, 12, c.hidden_size});
    EXPECT_LT((o.projected.sum(1) - at::matmul(merged, Wo.t())).abs().max().item<double>(), 1e-12);
  });
  EXPECT_EQ(calls, 2);
  // Not requested, not computed.
  m.forward(ids_tensor(kRows), valid_tensor(kValid, 12), {}, [&](const LayerOutputs& o) { EXPECT_FALSE(o.projected.defined()); });
}

TEST_F(TinyModel, BFloat16RunsCloseToFloat32) {
  const TransformerEncoder m32 = TransformerEncoder::load(dir_, at::kFloat), m16 = TransformerEncoder::load(dir_, at::kBFloat16);
  const at::Tensor a = m32.forward(ids_tensor(kRows), valid_tensor(kValid, 12));
  const at::Tensor b = m16.forward(ids_tensor(kRows), valid_tensor(kValid, 12)).to(at::kFloat);
  EXPECT_EQ(b.scalar_type(), at::kFloat);
  EXPECT_LT((a - b).abs().mean().item<float>(), 0.1f);
}

TEST_F(TinyModel, KeyNameVariantsLoadTheSameModel) {
  // BertForMaskedLM-style: "bert." prefix, LayerNorm gamma/beta, a cls head, an extra tensor.
  SafetensorsFile f(dir_ + "/model.safetensors");
  std::map<std::string, TensorData> renamed;
  for (const auto& [name, v] : f.tensors()) {
    std::string n = "bert." + name;
    if (n.size() > 16 && n.compare(n.size() - 16, 16, "LayerNorm.weight") == 0) n = n.substr(0, n.size() - 6) + "gamma";
    if (n.size() > 14 && n.compare(n.size() - 14, 14, "LayerNorm.bias") == 0) n = n.substr(0, n.size() - 4) + "beta";
    renamed[n] = TensorData{v.dtype, v.shape, std::vector<uint8_t>(v.data, v.data + v.nbytes)};
  }
  renamed["cls.predictions.bias"] = TensorData{DType::F32, {64}, std::vector<uint8_t>(256)};
  renamed["something.else"] = TensorData{DType::F32, {1}, std::vector<uint8_t>(4)};
  const std::string dir2 = (tmp_.path / "renamed").string();
  std::filesystem::create_directories(dir2);
  std::filesystem::copy_file(dir_ + "/config.json", dir2 + "/config.json");
  write_safetensors(dir2 + "/model.safetensors", renamed);
  LoadReport r;
  const TransformerEncoder a = TransformerEncoder::load(dir_, at::kFloat), b = TransformerEncoder::load(dir2, at::kFloat, &r);
  EXPECT_EQ(r.ignored, (std::vector<std::string>{"cls.predictions.bias"}));
  EXPECT_EQ(r.unexpected, (std::vector<std::string>{"something.else"}));
  const at::Tensor ids = ids_tensor(kRows), valid = valid_tensor(kValid, 12);
  EXPECT_TRUE(at::equal(a.forward(ids, valid), b.forward(ids, valid)));
}

TEST_F(TinyModel, IntegerBuffersAreIgnoredAndIntegerWeightsRefused) {
  SafetensorsFile f(dir_ + "/model.safetensors");
  std::map<std::string, TensorData> with_buffer, int_weight;
  for (const auto& [name, v] : f.tensors())
    with_buffer[name] = TensorData{v.dtype, v.shape, std::vector<uint8_t>(v.data, v.data + v.nbytes)};
  int_weight = with_buffer;
  with_buffer["embeddings.position_ids"] = TensorData{DType::I64, {1, 4}, std::vector<uint8_t>(32, 0)};  // as real BERT files carry it
  const std::string bias = "encoder.layer.0.output.dense.bias";
  ASSERT_EQ(int_weight.count(bias), 1u);
  int_weight[bias].dtype = DType::I32;  // same byte count: 4 per value
  for (const auto& [sub, tensors] : {std::pair{"buffer", &with_buffer}, std::pair{"intweight", &int_weight}}) {
    std::filesystem::create_directories(tmp_.path / sub);
    std::filesystem::copy_file(dir_ + "/config.json", tmp_.path / sub / "config.json");
    write_safetensors((tmp_.path / sub / "model.safetensors").string(), *tensors);
  }
  LoadReport r;
  const TransformerEncoder a = TransformerEncoder::load(dir_, at::kFloat),
                           b = TransformerEncoder::load((tmp_.path / "buffer").string(), at::kFloat, &r);
  EXPECT_EQ(r.ignored, (std::vector<std::string>{"embeddings.position_ids"}));
  const at::Tensor ids = ids_tensor(kRows), valid = valid_tensor(kValid, 12);
  EXPECT_TRUE(at::equal(a.forward(ids, valid), b.forward(ids, valid)));
  try {
    TransformerEncoder::load((tmp_.path / "intweight").string(), at::kFloat);
    ADD_FAILURE() << "an I32 weight was loaded";
  } catch (const Error& e) {
    EXPECT_HAS(std::string(e.what()), "tensor '" + bias + "': is I32, but it is a weight, which must be floating");
  }
}

TEST_F(TinyModel, MissingAndMisshapenTensorsAreListed) {
  SafetensorsFile f(dir_ + "/model.safetensors");
  std::map<std::string, TensorData> t;
  for (const auto& [name, v] : f.tensors()) t[name] = TensorData{v.dtype, v.shape, std::vector<uint8_t>(v.data, v.data + v.nbytes)};
  auto missing = t;
  missing.erase("encoder.layer.1.attention.self.key.bias");
  missing.erase("embeddings.LayerNorm.weight");
  const std::string d1 = (tmp_.path / "missing").string();
  std::filesystem::create_directories(d1);
  std::filesystem::copy_file(dir_ + "/config.json", d1 + "/config.json");
  write_safetensors(d1 + "/model.safetensors", missing);
  try {
    TransformerEncoder::load(d1, at::kFloat);
    FAIL();
  } catch (const Error& e) {
    EXPECT_HAS(e.what(), "missing encoder tensors: embeddings.LayerNorm.weight, encoder.layer.1.attention.self.key.bias");
  }
  auto bad = t;
  bad["encoder.layer.0.intermediate.dense.bias"] = TensorData{DType::F32, {3}, std::vector<uint8_t>(12)};
  write_safetensors(d1 + "/model.safetensors", bad);
  try {
    TransformerEncoder::load(d1, at::kFloat);
    FAIL();
  } catch (const Error& e) { EXPECT_HAS(e.what(), "encoder.layer.0.intermediate.dense.bias is [3], config.json implies [64]"); }
  std::filesystem::remove(d1 + "/config.json");
  EXPECT_THROW(TransformerEncoder::load(d1, at::kFloat), Error);
}

TEST_F(TinyModel, HalfPrecisionCheckpointsConvert) {
  // The same weights stored as F16 load as (rounded) F32.
  SafetensorsFile f(dir_ + "/model.safetensors");
  std::map<std::string, TensorData> t;
  for (const auto& [name, v] : f.tensors()) {
    at::Tensor x = at::from_blob(const_cast<uint8_t*>(v.data), v.shape, at::kFloat).clone().to(at::kHalf);
    TensorData td{DType::F16, v.shape, std::vector<uint8_t>(size_t(x.numel()) * 2)};
    std::memcpy(td.bytes.data(), x.data_ptr(), td.bytes.size());
    t[name] = td;
  }
  const std::string d2 = (tmp_.path / "half").string();
  std::filesystem::create_directories(d2);
  std::filesystem::copy_file(dir_ + "/config.json", d2 + "/config.json");
  write_safetensors(d2 + "/model.safetensors", t);
  const TransformerEncoder a = TransformerEncoder::load(dir_, at::kFloat), b = TransformerEncoder::load(d2, at::kFloat);
  const at::Tensor ids = ids_tensor(kRows), valid = valid_tensor(kValid, 12);
  EXPECT_LT((a.forward(ids, valid) - b.forward(ids, valid)).abs().max().item<float>(), 0.05f);
}

TEST(InitModel, DeterministicAndBertInitialisation) {
  test::TempDir tmp;
  const std::string vocab = small_vocab(tmp);
  const ModelConfig c = ModelConfig::preset("bert-tiny");
  write_random_checkpoint(c, 7, vocab, (tmp.path / "a").string());
  write_random_checkpoint(c, 7, vocab, (tmp.path / "b").string());
  write_random_checkpoint(c, 8, vocab, (tmp.path / "c").string());
  for (const char* f : {"model.safetensors", "config.json", "vocab.txt"})
    EXPECT_EQ(sha256_file((tmp.path / "a" / f).string()), sha256_file((tmp.path / "b" / f).string())) << f;
  EXPECT_NE(sha256_file((tmp.path / "a/model.safetensors").string()), sha256_file((tmp.path / "c/model.safetensors").string()));
  LoadReport r;
  const TransformerEncoder m = TransformerEncoder::load((tmp.path / "a").string(), at::kFloat, &r);
  EXPECT_EQ(r.tensors_in_file, 5 + 16 * 2 + 2);
  EXPECT_EQ(r.encoder_tensors, r.tensors_in_file);
  EXPECT_EQ(m.config().vocab_size, 64);
  SafetensorsFile f((tmp.path / "a/model.safetensors").string());
  const auto values = [&](const std::string& n) {
    const TensorView* v = f.find(n);
    return at::from_blob(const_cast<uint8_t*>(v->data), v->shape, at::kFloat).clone();
  };
  EXPECT_EQ(values("encoder.layer.0.output.LayerNorm.weight").min().item<float>(), 1.0f);
  EXPECT_EQ(values("encoder.layer.0.output.LayerNorm.bias").abs().max().item<float>(), 0.0f);
  EXPECT_EQ(values("encoder.layer.1.attention.self.query.bias").abs().max().item<float>(), 0.0f);
  const at::Tensor w = values("encoder.layer.0.intermediate.dense.weight");  // 65,536 draws
  EXPECT_NEAR(w.std().item<float>(), 0.02f, 0.0005f);
  EXPECT_NEAR(w.mean().item<float>(), 0.0f, 0.0005f);
}

TEST(Threads, ConfiguredCountIsApplied) {
  EXPECT_EQ(configure_threads(1), 1);
  EXPECT_EQ(configure_threads(2), 2);
}

}  // namespace
}  // namespace ctxsim
