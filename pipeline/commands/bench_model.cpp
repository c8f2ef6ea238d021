// `ctxsim bench-model`: the forward pass against the whole per-sample pipeline, in one process.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <iomanip>
#include <iostream>

#include <torch/csrc/autograd/profiler_legacy.h>

#include "pipeline/commands/commands.h"
#include "stages/base/cpu_features.h"
#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/stopwatch.h"
#include "stages/model/family.h"
#include "stages/model/model.h"
#include "stages/model/random_checkpoint.h"
#include "stages/model/safetensors.h"
#include "stages/stats/analysis.h"

namespace ctxsim {

namespace {

// The selection rules of `bench-model --rules N`: 1 = the default rule; 3 adds a dense and an
// absolute rule; 7 = configs/sweeps/thresholds.yaml folded into one run.
std::vector<SelectionRule> bench_rules(int64_t n) {
  const auto rule = [](SelectionRule::Kind k, double v) {
    SelectionRule r;
    r.kind = k;
    r.value = v;
    return r;
  };
  using K = SelectionRule::Kind;
  if (n == 1) return {rule(K::TopFraction, 0.01)};
  if (n == 3) return {rule(K::TopFraction, 0.01), rule(K::RelativeToMax, 0.9), rule(K::Absolute, 1.0)};
  if (n == 7)
    return {rule(K::TopFraction, 0.005), rule(K::TopFraction, 0.01),  rule(K::TopFraction, 0.02),  rule(K::TopFraction, 0.05),
            rule(K::RelativeToMax, 0.8), rule(K::RelativeToMax, 0.9), rule(K::RelativeToMax, 0.95)};
  throw Error("--rules " + std::to_string(n), "not a benchmark rule set", "use 1, 3 or 7");
}

}  // namespace

namespace {

// Samples per second of (a) the plain forward, (b) the forward handing out every layer's
// context vectors and attention maps, and (c) the full per-sample pipeline, on B synthetic
// samples of full length (sentences of 20 tokens). They alternate in short rounds so that drift
// of the machine hits all three alike.
struct Rates {
  double plain = 0, handed_out = 0, pipeline = 0;
  double gemm_gflops = 0;  // (g)
};

// (g): the forward's projections alone, what it would reach if nothing else took time - each
// layer's four GEMMs (fused QKV, W_O, the feed-forward's in and out) at B·T rows, through the same
// LibTorch and BLAS, on random weights of the model's shapes. Four layers' worth, cycled, so that
// the weights come from memory as the forward's do (where four layers exceed the L3: BERT-base's
// and SmolLM2's in float32; a small model's (g) runs from cache).
class LayerGemms {
 public:
  LayerGemms(const ModelConfig& c, int64_t rows, const at::TensorOptions& o) : layers_(c.num_layers) {
    const int64_t h = c.hidden_size, q = c.num_heads * c.head_dim(), kv = c.kv_heads() * c.head_dim(), f = c.intermediate_size;
    const int64_t f_in = family_spec(c.family).ffn_gate ? 2 * f : f;
    for (int k = 0; k < 4; ++k)
      weights_.push_back({at::randn({q + 2 * kv, h}, o), at::randn({h, q}, o), at::randn({f_in, h}, o), at::randn({h, f}, o)});
    hidden_ = at::randn({rows, h}, o), heads_ = at::randn({rows, q}, o), inner_ = at::randn({rows, f}, o);
    flops_ = 2.0 * double(rows) * double(h * (q + 2 * kv) + q * h + h * f_in + f * h) * double(layers_);
  }
  void run() const {
    for (int64_t l = 0; l < layers_; ++l) {
      const auto& w = weights_[size_t(l) % weights_.size()];
      (void)at::linear(hidden_, w[0]), (void)at::linear(heads_, w[1]), (void)at::linear(hidden_, w[2]), (void)at::linear(inner_, w[3]);
    }
  }
  double flops() const { return flops_; }

 private:
  int64_t layers_;
  std::vector<std::array<at::Tensor, 4>> weights_;
  at::Tensor hidden_, heads_, inner_;
  double flops_ = 0;
};

Rates time_batch(const Encoder& m, const std::vector<SelectionRule>& rules, int64_t B, int64_t T, double seconds) {
  const at::Device dev = m.device();
  const LayerGemms gemms(m.config(), B * T, at::TensorOptions().dtype(m.dtype()).device(dev));
  const at::Tensor ids = at::randint(1000, 2000, {B, T}, at::kLong).to(dev);
  const at::Tensor valid = at::ones({B, T}, at::TensorOptions().dtype(at::kBool).device(dev));
  // A GPU works asynchronously: reading one value back waits for everything queued before it.
  const auto sync = [&] {
    if (!dev.is_cpu()) (void)at::zeros({1}, at::TensorOptions().device(dev)).sum().item<float>();
  };
  double sink = 0;
  const LayerCallback touch = [&](const LayerOutputs& o) {
    sink += o.context.data_ptr() != nullptr;
    sink += o.attention.data_ptr() != nullptr;
  };
  StatisticsOptions opt;
  opt.rules = rules;
  opt.separator_ids = {1010, 1012, 102};
  opt.special_ids = {0, 100, 101, 102, 103};
  const Analysis analysis(m, opt, false);
  const at::Tensor ids32 = ids.to(at::kCPU, at::kInt).contiguous();
  std::vector<int16_t> sent(static_cast<size_t>(B * T)), nvalid(static_cast<size_t>(B), static_cast<int16_t>(T));
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = int16_t((i % size_t(T)) / 20);
  const BatchSamples bs{ids32.data_ptr<int32_t>(), sent.data(), nvalid.data(), B, T};
  Accumulator acc(analysis.shape(T));
  const at::Tensor device_acc =
      dev.is_cpu() ? at::Tensor() : at::zeros({int64_t(acc.buffer().size())}, at::TensorOptions().dtype(at::kLong).device(dev));
  m.forward(ids, valid, {}, nullptr);  // warm-up
  analysis.run_batch(bs, acc, nullptr, device_acc);
  sync();
  gemms.run();
  sync();
  double sa = 0, sb = 0, sc = 0, sg = 0, n = 0, g = 0;
  while (sa + sb + sc < 3 * seconds) {
    Stopwatch clock;
    m.forward(ids, valid, {}, nullptr);
    sync();
    sa += clock.seconds();
    clock.restart();
    m.forward(ids, valid, {}, touch);
    sync();
    sb += clock.seconds();
    clock.restart();
    analysis.run_batch(bs, acc, nullptr, device_acc);  // per-sample results come back: synchronous
    sc += clock.seconds();
    clock.restart();
    gemms.run();
    sync();
    sg += clock.seconds();
    n += double(B);
    g += gemms.flops();
  }
  (void)sink;
  return Rates{n / sa, n / sb, n / sc, g / sg / 1e9};
}

// Five plain forward passes of B samples under LibTorch's operator profiler, its Chrome trace
// (every ATen operator with its thread, start and duration) written to `path`.
void profile_forward(const Encoder& m, int64_t B, int64_t T, const std::string& path) {
  const at::Tensor ids = at::randint(1000, 2000, {B, T}, at::kLong).to(m.device());
  const at::Tensor valid = at::ones({B, T}, at::TensorOptions().dtype(at::kBool).device(m.device()));
  m.forward(ids, valid, {}, nullptr);  // as column (a)
  torch::autograd::profiler::RecordProfile trace(path);
  for (int k = 0; k < 5; ++k) m.forward(ids, valid, {}, nullptr);
}

}  // namespace

int cmd_bench_model(const BenchModelArgs& a, std::ostream& out) {
  const std::vector<SelectionRule> rules = bench_rules(a.rules);
  const int threads = configure_threads(a.threads);
  if (const std::string note = thread_cap_note(a.threads, threads, "--threads"); !note.empty()) out << note << "\n";
  const at::Device device = compute_device(a.device, 0, "--device");
  // A real checkpoint (--model), or random weights in memory: speed does not depend on their values.
  const bool real = !a.model.empty();
  const ModelConfig c = real ? model_config_of(a.model) : ModelConfig::preset(a.preset, parse_family(a.family, "--family"));
  if (const std::string problem = c.positions_problem(a.seq_len); !problem.empty())
    throw Error("--seq-len " + std::to_string(a.seq_len), problem, "use at most " + std::to_string(c.max_tokens()));
  // A batch's attention maps (scores, probabilities, the statistics' copy) must fit in memory.
  const int64_t largest = *std::max_element(a.batches.begin(), a.batches.end());
  const double need = 3.0 * 8 * double(largest) * double(c.num_heads) * double(a.seq_len) * double(a.seq_len);
  const double have = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  if (have > 0 && need > 0.8 * have)
    throw Error("--batch " + std::to_string(largest) + " --seq-len " + std::to_string(a.seq_len),
                "one batch's attention maps alone need about " + std::to_string(int64_t(need / 1e9)) + " GB, more than this machine's " +
                    std::to_string(int64_t(have / 1e9)) + " GB",
                "use a smaller --batch or --seq-len");
  std::map<std::string, at::Tensor> tensors;
  if (!real)
    for (const auto& [name, shape] : encoder_tensor_shapes(c)) tensors[name] = at::randn(shape) * 0.02;
  const double gflop = c.flops_per_sample(a.seq_len) / 1e9;
  const CpuFeatures cpu = cpu_features();
  out << "bench-model: " << (real ? a.model : a.preset) << ", T=" << a.seq_len << ", " << gflop << " GFLOP per sample, " << threads
      << " threads, " << rules.size() << " selection rule(s); " << device_name(device) << "; CPU: " << cpu.describe() << "\n"
      << "ISA: " << configure_compute_libraries().describe() << "\n"
      << "(a) plain forward; (b) forward handing out context vectors and attention maps; (c) the full\n"
      << "per-sample pipeline: forward + similarity + all statistics; (g) the forward's projections alone\n"
      << "(each layer's four GEMMs at batch x T rows), alternating with (a)-(c); a/g: (a)'s GF/s (attention products included) over (g)\n"
      << std::left << std::setw(10) << "dtype" << std::setw(7) << "batch" << std::setw(24) << "(a) samples/s, GF/s" << std::setw(24)
      << "(b)" << std::setw(8) << "b/a" << std::setw(24) << "(c)" << std::setw(8) << "c/a" << std::setw(10) << "(g) GF/s"
      << "a/g\n";
  const auto cell = [&](double rate) {
    std::ostringstream c;
    c << std::fixed << std::setprecision(1) << rate << ", " << rate * gflop;
    return c.str();
  };
  for (const auto& dt : a.dtypes) {
    if (dt == "bfloat16" && device.is_cpu() && !cpu.native_bf16()) {
      out << std::left << std::setw(10) << dt << "skipped: this CPU has neither avx512_bf16 nor amx_bf16 (at " << isa_name(isa_level())
          << "), so LibTorch would emulate it\n";
      continue;
    }
    const TransformerEncoder m = real ? TransformerEncoder::load(a.model, parse_dtype(dt, "--dtype"), nullptr, device)
                                      : TransformerEncoder::from_tensors(c, tensors, parse_dtype(dt, "--dtype"), device);
    for (int64_t B : a.batches) {
      const Rates r = time_batch(m, rules, B, a.seq_len, a.seconds);
      out << std::left << std::setw(10) << dt << std::setw(7) << B << std::setw(24) << cell(r.plain) << std::setw(24) << cell(r.handed_out)
          << std::setw(8) << std::fixed << std::setprecision(2) << r.handed_out / r.plain << std::setw(24) << cell(r.pipeline)
          << std::setw(8) << r.pipeline / r.plain << std::setw(10) << std::setprecision(1) << r.gemm_gflops << std::setprecision(2)
          << r.plain * gflop / r.gemm_gflops << "\n";
      if (!a.profile.empty()) profile_forward(m, B, a.seq_len, a.profile);
    }
  }
  return 0;
}

}  // namespace ctxsim
