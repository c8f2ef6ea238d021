#include "pipeline/commands/run_units.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "stages/base/error.h"
#include "stages/base/stopwatch.h"

namespace ctxsim {
namespace {

std::vector<uint16_t> half_bits(const at::Tensor& t) {
  const at::Tensor h = t.to(at::kHalf).contiguous();
  std::vector<uint16_t> v(static_cast<size_t>(h.numel()));
  std::memcpy(v.data(), h.data_ptr(), v.size() * 2);
  return v;
}

}  // namespace

bool fault_here(const std::string& where, int rank) {
  const char* f = std::getenv("CTXSIM_FAULT");
  return f && std::string(f) == where + "@" + std::to_string(rank);
}

void unit_delay_for_tests() {
  if (const char* delay = std::getenv("CTXSIM_UNIT_DELAY_MS"); delay && std::atoi(delay) > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(delay)));
}

AnalysisUnits::AnalysisUnits(const Analysis& analysis, const SampleSet& samples, int64_t batch_size, std::vector<int64_t> examples,
                             Store& store, Accumulator& acc, Communicator& world, Communicator& reducer, ResumeTarget resume)
    : analysis_(analysis), samples_(samples), batch_size_(batch_size), examples_(std::move(examples)), store_(store), acc_(acc),
      world_(world), reducer_(reducer), resume_(std::move(resume)), R_(acc.shape().rules), L_(acc.shape().layers), H_(acc.shape().heads),
      T_(samples.seq_len) {
  // A GPU rank's statistics are whole-tensor operations on its device, counted there; the
  // CTXSIM_TENSOR_STATISTICS=1 test hook takes that path on the CPU too.
  const char* force = std::getenv("CTXSIM_TENSOR_STATISTICS");
  if (!analysis_.device().is_cpu() || (force && std::string(force) == "1"))
    device_acc_ = at::zeros({int64_t(acc_.buffer().size())}, at::TensorOptions().dtype(at::kLong).device(analysis_.device()));
}

void AnalysisUnits::compute(const WorkUnit& unit) {
  if (fault_here("unit", world_.rank())) throw Error("unit " + std::to_string(unit.index), "injected fault in a stage", "test hook");
  anchor_token_.assign(size_t(R_ * unit.count * L_ * H_), -1);
  anchor_share_.assign(anchor_token_.size(), 0.0f);
  high_pairs_.assign(anchor_token_.size(), 0);
  // The unit's own partial sums, for /units: this rank's accumulator before and after (the kept
  // fields only: not the per-token counts), with its device copy's (where some counts go on a GPU
  // rank) added.
  const at::Tensor device_before = device_acc_.defined() ? device_acc_.clone() : at::Tensor();
  const std::vector<int64_t> before = acc_.unit_row(acc_.buffer().data());
  for (const auto& [b0, B] : unit_batches(unit, batch_size_)) {
    const BatchSamples bs = BatchSamples::of(samples_, b0, B);
    std::vector<std::pair<int64_t, int64_t>> in_batch;  // (example index, row in batch)
    for (size_t e = 0; e < examples_.size(); ++e)
      if (examples_[e] >= b0 && examples_[e] < b0 + B) in_batch.emplace_back(int64_t(e), examples_[e] - b0);
    std::vector<std::vector<at::Tensor>> ex_att(in_batch.size()), ex_sim(in_batch.size()), ex_sel(in_batch.size());
    LayerHook keep_examples;
    if (!in_batch.empty())
      keep_examples = [&](int64_t, const at::Tensor& sim, const at::Tensor& attention, const BatchStatistics& stats) {
        for (size_t q = 0; q < in_batch.size(); ++q) {
          const int64_t row = in_batch[q].second;
          ex_att[q].push_back(attention[row].to(at::kCPU, at::kFloat).clone());
          ex_sim[q].push_back(sim[row].to(at::kCPU, at::kFloat).clone());
          std::vector<at::Tensor> per_rule;
          for (int64_t r = 0; r < R_; ++r) per_rule.push_back(stats.selection_matrix(r, row));
          ex_sel[q].push_back(at::stack(per_rule));  // [R, H, T, T]
        }
      };
    const Stopwatch clock;
    const double started_after = batch_times_.started() ? 0 : seconds_since_process_start();
    const PerSampleStats ps = analysis_.run_batch(bs, acc_, keep_examples, device_acc_);
    batch_times_.add(clock.seconds(), started_after);
    // [R, B, L, H] of the batch into [R, unit.count, L, H] of the unit.
    for (int64_t r = 0; r < R_; ++r) {
      const size_t src = size_t(r * B * L_ * H_), dst = size_t((r * unit.count + (b0 - unit.first)) * L_ * H_), n = size_t(B * L_ * H_);
      std::copy_n(ps.anchor_token.begin() + long(src), n, anchor_token_.begin() + long(dst));
      std::copy_n(ps.anchor_share.begin() + long(src), n, anchor_share_.begin() + long(dst));
      std::copy_n(ps.high_pairs.begin() + long(src), n, high_pairs_.begin() + long(dst));
    }
    store_examples(in_batch, ex_att, ex_sim, ex_sel);
  }
  unit_row_ = acc_.unit_row(acc_.buffer().data());
  for (size_t i = 0; i < unit_row_.size(); ++i) unit_row_[i] -= before[i];
  if (device_acc_.defined()) {
    const at::Tensor diff = (device_acc_ - device_before).to(at::kCPU).contiguous();
    const std::vector<int64_t> on_device = acc_.unit_row(diff.data_ptr<int64_t>());
    for (size_t i = 0; i < unit_row_.size(); ++i) unit_row_[i] += on_device[i];
  }
  unit_delay_for_tests();
}

void AnalysisUnits::store_examples(const std::vector<std::pair<int64_t, int64_t>>& in_batch,
                                   const std::vector<std::vector<at::Tensor>>& attention,
                                   const std::vector<std::vector<at::Tensor>>& similarity,
                                   const std::vector<std::vector<at::Tensor>>& selected) {
  for (size_t q = 0; q < in_batch.size(); ++q) {
    const at::Tensor sel = at::stack(selected[q], 1).contiguous();  // [R, L, H, T, T]
    std::vector<uint8_t> sel_bytes(size_t(sel.numel()));
    std::memcpy(sel_bytes.data(), sel.data_ptr(), sel_bytes.size());
    store_.write_example(in_batch[q].first, half_bits(at::stack(attention[q])), half_bits(at::stack(similarity[q])), sel_bytes);
  }
}

void AnalysisUnits::write(const WorkUnit* unit) {
  if (!unit) {
    store_.write_per_sample(0, 0, {}, {}, {});
    store_.write_unit_sums(-1, {});
    return;
  }
  store_.write_per_sample(unit->first, unit->count, anchor_token_, anchor_share_, high_pairs_);
  store_.write_unit_sums(unit->index, unit_row_);
}

void AnalysisUnits::make_durable(const std::vector<uint8_t>& done) {
  // The device's counts join this rank's accumulator, one copy per flush.
  if (device_acc_.defined()) {
    const at::Tensor host = device_acc_.to(at::kCPU).contiguous();
    const int64_t* d = host.data_ptr<int64_t>();
    for (size_t i = 0; i < acc_.buffer().size(); ++i) acc_.buffer()[i] += d[i];
    device_acc_.zero_();
  }
  // Durability order: the units' per-sample data, then the state that vouches for it.
  store_.flush();
  reducer_.reduce_sum_to_root(acc_.buffer().data(), acc_.buffer().size());
  if (world_.rank() == 0)
    write_checkpoint(resume_.path, Checkpoint{resume_.identity, ++resume_.generation, done, acc_.buffer()});
  else
    std::fill(acc_.buffer().begin(), acc_.buffer().end(), 0);
}

}  // namespace ctxsim
