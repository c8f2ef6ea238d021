// `ctxsim prune CONFIG`: head importance (Michel et al. 2019), per-head ablation and the curves of
// loss and accuracy as heads are removed in several orders (SPEC §8), over held-out samples of a
// language model (masked-LM, or next-token for a decoder: the family row's objective), as an MPI job on the run's
// scaffold (job_shell.h: lock, resume, status, store).
//
// Two passes over work units of samples. Pass 1: the full model with per-sample gate gradients and
// attention entropies, and the model without each head alone. The orders follow from pass 1's
// sums (every rank reads them back from the store, so a resumed job finds them too). Pass 2: every
// order at every fraction. A unit's sums are computed the same way whoever computes it (its
// samples in batches of runtime.batch_size) and summed over units in unit order: the results do
// not depend on the rank count or on resumes.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include "pipeline/commands/commands.h"
#include "pipeline/commands/job_shell.h"
#include "pipeline/commands/run_units.h"
#include "pipeline/job/config/inputs.h"
#include "pipeline/job/durable/checkpoint.h"
#include "pipeline/job/parallel/agree.h"
#include "pipeline/job/parallel/comm.h"
#include "pipeline/job/parallel/log.h"
#include "pipeline/job/parallel/progress.h"
#include "pipeline/job/parallel/rounds.h"
#include "pipeline/report/report_data.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/prune_store.h"
#include "pipeline/store/segment_store.h"
#include "stages/base/cpu_features.h"
#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/model_folder.h"
#include "stages/base/stopwatch.h"
#include "stages/model/mlm.h"
#include "stages/model/model.h"
#include "stages/prune/prune.h"
#include "stages/stats/metrics.h"

namespace ctxsim {
namespace {

struct PruneInputs {
  int threads = 1;
  std::optional<JobTokenizer> tokenizer;
  PreparedSamples prepared;
  std::optional<MlmModel> model;
  std::vector<int32_t> input, labels;                 // [N, T] SPEC §8's inputs and targets (-1: not predicted)
  std::map<std::string, std::vector<double>> scores;  // each of prune.score from prune.scores_from, [L*H]; empty: none
};

// The per-head scores of a run store (prune.scores_from) by their metric rows.
std::map<std::string, std::vector<double>> store_scores(const Config& c, const ModelConfig& mc, const std::string& model_dir) {
  if (c.prune.scores_from.empty()) {
    // An order asked for from no store would silently not be there (the default, which every
    // config.yaml ctxsim writes spells out, asks for nothing).
    if (c.origin.count("prune.score") && c.prune.score != Config{}.prune.score)
      throw Error(c.where("prune.score"), "names scores of prune.scores_from, which is empty",
                  "set prune.scores_from to the store.h5 of a run of this model, or leave prune.score out");
    return {};
  }
  const std::string& path = c.prune.scores_from;
  const std::string key = c.where("prune.scores_from");
  h5::Id file;
  try {
    file = open_complete_store(path);
  } catch (const Error& e) { throw Error(key, e.problem(), e.fix()); }
  try {
    require_store_job(file, "run");
  } catch (const Error& e) { throw Error(key, path + " " + e.problem(), "give the store.h5 of a run of this model"); }
  const report::StoreData d = report::load_store_data(file, path, "");
  if (d.L != mc.num_layers || d.H != mc.num_heads)
    throw Error(key,
                path + " measured " + std::to_string(d.L) + " layers x " + std::to_string(d.H) + " heads, and the model has " +
                    std::to_string(mc.num_layers) + " x " + std::to_string(mc.num_heads),
                "give the store of a run of this model");
  // The same weights, not only the same shape: another model's heads would order this one's.
  if (h5::has_attr(file, "model_sha256") && h5::get_attr_string(file, "model_sha256") != ModelFolder(model_dir).weights_sha256())
    throw Error(key,
                path + " measured another model (" + (h5::has_attr(file, "model_path") ? h5::get_attr_string(file, "model_path") : "?") +
                    ": other weights than " + model_dir + ")",
                "give the store of a run of this model (ctxsim run with model.path=" + model_dir + ")");
  std::map<std::string, std::vector<double>> out;
  for (const std::string& name : c.prune.score) {
    const Metric& m = metric(prune::score_row(name)->metric);
    std::vector<double> v;
    for (int64_t l = 0; l < d.L; ++l)
      for (int64_t h = 0; h < d.H; ++h) v.push_back(m.value(d.stats.head(l, h), d.base));
    if (m.count && std::all_of(v.begin(), v.end(), [](double x) { return x == 0; }))
      throw Error(key, path + " has no " + m.name + " (a store written before ctxsim measured it)",
                  "run the model again with this ctxsim for the store, or choose another prune.score");
    out.emplace(name, std::move(v));
  }
  return out;
}

// The SHA-256 of the scores as the orders use them (each name, then its float64 values): a score
// store replaced under the same path is another pruning job's input.
std::string scores_digest(const Config& c, const std::map<std::string, std::vector<double>>& scores) {
  if (scores.empty()) return {};
  Sha256 h;
  for (const std::string& name : c.prune.score) {
    const std::vector<double>& v = scores.at(name);
    h.update_field(name).update(v.data(), v.size() * sizeof(double));
  }
  return h.hex();
}

PruneInputs load_prune_inputs(MpiComm& world, const JobPlan& p, std::map<std::string, std::vector<double>> scores) {
  PruneInputs in;
  const Config& c = p.config;
  on_every_rank(world, [&] {
    in.threads = configure_threads(c.runtime.threads, world.local_size());
    log_info(version_string() + "; prune " + p.config_path + "; " + std::to_string(world.size()) + " rank(s) x " +
             std::to_string(in.threads) + " thread(s)" + busy_cores_note() + "; " + configure_compute_libraries().describe());
    in.model.emplace(MlmModel::load(p.model_dir, torch_dtype(c.model.dtype)));
    const ModelConfig& mc = in.model->config();
    check_positions(c, mc.max_tokens());
    in.tokenizer.emplace(make_tokenizer(c));
    check_vocab_fits(c, in.tokenizer->vocab(), mc.vocab_size);
    // The row's objective: masked positions (encoders) or the next token (decoders), SPEC §8.
    const LmHead& head = family_spec(mc.family).lm_head;
    const bool causal = head.objective == LmObjective::Causal;
    const int32_t mask_id = causal ? -1 : in.tokenizer->vocab().id(head.mask_token);
    if (!causal && mask_id < 0)
      throw Error(c.where("model.vocab"), vocab_path(c) + " has no " + head.mask_token + " token, which the masked-LM loss needs",
                  "use the model's own tokenizer files");
    in.prepared = prepare_samples(c, *in.tokenizer);
    const SampleSet& s = in.prepared.samples;
    const int64_t N = s.size(), T = s.seq_len;
    in.input.resize(size_t(N * T));
    in.labels.resize(size_t(N * T));
    for (int64_t n = 0; n < N; ++n) {
      const int32_t* ids = &s.token_ids[size_t(n * T)];
      int32_t* input = &in.input[size_t(n * T)];
      int32_t* labels = &in.labels[size_t(n * T)];
      if (causal)
        prune::next_token_targets(ids, int32_t(T), s.n_valid[size_t(n)], input, labels);
      else
        prune::mask_targets(ids, int32_t(T), s.n_valid[size_t(n)], in.tokenizer->frame.specials, mask_id, uint64_t(c.samples.seed),
                            uint64_t(n), input, labels);
    }
    in.scores = scores;
  });
  return in;
}

std::vector<std::string> order_names(const Config& c) {
  std::vector<std::string> names = {"importance", "ablation", "entropy"};
  if (!c.prune.scores_from.empty())
    for (const std::string& score : c.prune.score) names.push_back("score:" + score);
  for (int64_t r = 1; r <= c.prune.random_seeds; ++r) names.push_back("random:" + std::to_string(r));
  return names;
}

// Sums over units in unit order (the same on every rank count and after resumes).
struct Pass1Totals {
  double loss = 0;
  int64_t correct = 0, predicted = 0;
  std::vector<double> importance, entropy, ablation_loss;
  std::vector<int64_t> ablation_correct;
};
Pass1Totals total(const std::vector<PrunePass1>& rows, int64_t LH) {
  Pass1Totals t;
  t.importance.assign(size_t(LH), 0), t.entropy.assign(size_t(LH), 0), t.ablation_loss.assign(size_t(LH), 0);
  t.ablation_correct.assign(size_t(LH), 0);
  for (const auto& r : rows) {
    t.loss += r.loss, t.correct += r.correct, t.predicted += r.predicted;
    for (size_t k = 0; k < size_t(LH); ++k)
      t.importance[k] += r.importance[k], t.entropy[k] += r.entropy[k], t.ablation_loss[k] += r.ablation_loss[k],
          t.ablation_correct[k] += r.ablation_correct[k];
  }
  return t;
}

// Each order of `names`, first removed first, from pass 1's totals (SPEC §8).
std::vector<std::vector<int64_t>> make_orders(const std::vector<std::string>& names, const Pass1Totals& t,
                                              const std::map<std::string, std::vector<double>>& scores) {
  const int64_t LH = int64_t(t.importance.size());
  std::vector<std::vector<int64_t>> orders;
  for (const auto& n : names) {
    if (n == "importance") {
      orders.push_back(prune::order_by(t.importance, true));
    } else if (n == "ablation") {
      orders.push_back(prune::order_by(t.ablation_loss, true));
    } else if (n == "entropy") {
      orders.push_back(prune::order_by(t.entropy, false));
    } else if (n.rfind("score:", 0) == 0) {
      const std::string score = n.substr(6);
      orders.push_back(prune::order_by(scores.at(score), prune::score_row(score)->ascending));
    } else {
      orders.push_back(prune::random_order(LH, std::stoull(n.substr(7))));
    }
  }
  return orders;
}

// A sample's value on the grid of 2^-32 (SPEC §8, as §4.7's attention masses): the last bits that
// another thread count leaves in a float64 sum inside the model do not reach the store, and sums of
// such values are exact, so a unit's sums are the same whoever computes them with how many threads.
double fixed_point(double v) { return std::nearbyint(v * 4294967296.0) / 4294967296.0; }

class PruneUnits final : public UnitWork {
 public:
  PruneUnits(const PruneInputs& in, PruneStore& store, const Config& c, MpiComm& world, std::string progress_path, std::string identity,
             int64_t generation, int phase, const std::vector<std::vector<int64_t>>* orders, std::vector<uint8_t>* all_done)
      : in_(in), store_(store), config_(c), world_(world), progress_path_(std::move(progress_path)), identity_(std::move(identity)),
        generation_(generation), phase_(phase), orders_(orders), all_done_(all_done) {}

  void compute(const WorkUnit& unit) override {
    if (phase_ == 1)
      pass1_ = first_pass(unit);
    else
      pass2_ = second_pass(unit);
    unit_delay_for_tests();
  }
  void write(const WorkUnit* unit) override {
    if (phase_ == 1)
      store_.write_pass1(unit ? unit->index : 0, unit ? &pass1_ : nullptr);
    else
      store_.write_pass2(unit ? unit->index : 0, unit ? &pass2_ : nullptr);
  }
  void make_durable(const std::vector<uint8_t>& done) override {
    store_.flush();
    // The resume state covers both passes: pass 1's units, then pass 2's.
    const size_t U = done.size();
    std::copy(done.begin(), done.end(), all_done_->begin() + ptrdiff_t(phase_ == 1 ? 0 : U));
    if (world_.rank() == 0) write_checkpoint(progress_path_, Checkpoint{identity_, ++generation_, *all_done_, {}});
  }
  int64_t generation() const { return generation_; }
  // This rank's seconds in pass 1's gradient passes and in its forward-only passes, and their counts.
  double gradient_seconds = 0, forward_seconds = 0;
  int64_t gradient_passes = 0, forward_passes = 0;

 private:
  MlmBatch batch_of(int64_t first, int64_t B) const {
    const int64_t T = in_.prepared.samples.seq_len;
    return make_mlm_batch(&in_.input[size_t(first * T)], &in_.labels[size_t(first * T)], &in_.prepared.samples.n_valid[size_t(first)], B, T,
                          std::vector<uint64_t>(size_t(B), 0));
  }
  // The unit under each set of gates [L*H] (the same for each of its samples), in batches. Per
  // batch the full model's layer inputs are computed once, and each set starts at the first layer
  // where it removes a head: the layers below it are the full model's, the same numbers.
  std::vector<std::pair<double, int64_t>> evaluate(const WorkUnit& u, const std::vector<std::vector<double>>& sets) {
    const Stopwatch clock;
    const ModelConfig& mc = in_.model->config();
    const int64_t L = mc.num_layers, H = mc.num_heads;
    std::vector<std::pair<double, int64_t>> out(sets.size(), {0.0, 0});
    for (int64_t first = u.first; first < u.first + u.count; first += config_.runtime.batch_size) {
      const int64_t B = std::min(config_.runtime.batch_size, u.first + u.count - first);
      const MlmBatch batch = batch_of(first, B);
      const std::vector<at::Tensor> inputs = in_.model->layer_inputs(batch, at::ones({B, L, H}, at::kDouble));
      for (size_t s = 0; s < sets.size(); ++s) {
        const std::vector<double>& gates = sets[s];
        const auto removed = std::find_if(gates.begin(), gates.end(), [](double g) { return g != 1.0; });
        const int64_t start = int64_t(removed - gates.begin()) / H;  // L when none is removed
        const at::Tensor g = at::tensor(gates, at::kDouble).view({1, L, H}).expand({B, L, H});
        const GatedMlm r = in_.model->evaluate_gated_from(batch, g, start, inputs[size_t(start)]);
        for (int64_t b = 0; b < B; ++b) out[s].first += fixed_point(r.loss[size_t(b)]), out[s].second += r.correct[size_t(b)];
      }
    }
    forward_seconds += clock.seconds(), forward_passes += int64_t(sets.size());
    return out;
  }
  PrunePass1 first_pass(const WorkUnit& u) {
    const ModelConfig& mc = in_.model->config();
    const int64_t L = mc.num_layers, H = mc.num_heads, LH = L * H;
    PrunePass1 r;
    r.importance.assign(size_t(LH), 0), r.entropy.assign(size_t(LH), 0);
    const Stopwatch clock;
    for (int64_t first = u.first; first < u.first + u.count; first += config_.runtime.batch_size) {
      const int64_t B = std::min(config_.runtime.batch_size, u.first + u.count - first);
      const GatedMlm g = in_.model->evaluate_gated(batch_of(first, B), at::ones({B, L, H}, at::kDouble), true, true);
      const at::Tensor grad = g.gate_grad.abs().contiguous(), ent = g.entropy.contiguous();
      const double *gp = grad.data_ptr<double>(), *ep = ent.data_ptr<double>();
      for (int64_t b = 0; b < B; ++b) {
        r.loss += fixed_point(g.loss[size_t(b)]), r.correct += g.correct[size_t(b)], r.predicted += g.predicted[size_t(b)];
        for (int64_t k = 0; k < LH; ++k)
          r.importance[size_t(k)] += fixed_point(gp[b * LH + k]), r.entropy[size_t(k)] += fixed_point(ep[b * LH + k]);
      }
    }
    gradient_seconds += clock.seconds(), ++gradient_passes;
    std::vector<std::vector<double>> ablations(size_t(LH), std::vector<double>(size_t(LH), 1.0));
    for (int64_t k = 0; k < LH; ++k) ablations[size_t(k)][size_t(k)] = 0.0;
    for (const auto& [loss, correct] : evaluate(u, ablations)) r.ablation_loss.push_back(loss), r.ablation_correct.push_back(correct);
    return r;
  }
  PrunePass2 second_pass(const WorkUnit& u) {
    const ModelConfig& mc = in_.model->config();
    const int64_t LH = mc.num_layers * mc.num_heads;
    const std::vector<double> fractions = prune::curve_fractions();
    // Orders share their first heads (and fraction 0 is the full model for all): each set of
    // removed heads is computed once per unit.
    std::map<std::vector<double>, size_t> index;
    std::vector<std::vector<double>> sets;
    std::vector<size_t> at;  // per order and fraction: its set
    for (const auto& order : *orders_)
      for (double p : fractions) {
        std::vector<double> gates = prune::gates_without(order, prune::removed_heads(p, LH), LH);
        const auto it = index.emplace(gates, sets.size()).first;
        if (it->second == sets.size()) sets.push_back(std::move(gates));
        at.push_back(it->second);
      }
    const std::vector<std::pair<double, int64_t>> results = evaluate(u, sets);
    PrunePass2 r;
    for (size_t k : at) r.loss.push_back(results[k].first), r.correct.push_back(results[k].second);
    return r;
  }

  const PruneInputs& in_;
  PruneStore& store_;
  const Config& config_;
  MpiComm& world_;
  std::string progress_path_, identity_;
  int64_t generation_ = 0;
  int phase_ = 1;
  const std::vector<std::vector<int64_t>>* orders_;
  std::vector<uint8_t>* all_done_;
  PrunePass1 pass1_;
  PrunePass2 pass2_;
};

PruneResults results_of(const PruneLayout& layout, const Pass1Totals& t, const std::vector<PrunePass2>& rows, int64_t samples,
                        const std::map<std::string, std::vector<double>>& scores) {
  const int64_t L = layout.layers, H = layout.heads, LH = L * H, O = int64_t(layout.orders.size()), F = layout.fractions;
  const double P = double(std::max<int64_t>(t.predicted, 1));
  PruneResults r;
  r.predicted = t.predicted;
  r.full_loss = t.loss / P, r.full_accuracy = double(t.correct) / P;
  r.importance = t.importance;
  for (int64_t l = 0; l < L; ++l) {
    double norm = 0;
    for (int64_t h = 0; h < H; ++h) norm += t.importance[size_t(l * H + h)] * t.importance[size_t(l * H + h)];
    norm = std::sqrt(norm);
    for (int64_t h = 0; h < H; ++h) r.importance_normalised.push_back(norm > 0 ? t.importance[size_t(l * H + h)] / norm : 0.0);
  }
  for (int64_t k = 0; k < LH; ++k) {
    r.ablation_loss.push_back(t.ablation_loss[size_t(k)] / P - r.full_loss);
    r.entropy.push_back(t.entropy[size_t(k)] / double(std::max<int64_t>(samples, 1)));
  }
  std::vector<double> loss(size_t(O * F), 0.0);
  std::vector<int64_t> correct(size_t(O * F), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < loss.size(); ++i) loss[i] += row.loss[i], correct[i] += row.correct[i];
  int64_t randoms = 0;
  std::vector<double> random_loss(size_t(F), 0.0), random_accuracy(size_t(F), 0.0);
  for (int64_t o = 0; o < O; ++o) {
    const bool random = layout.orders[size_t(o)].rfind("random:", 0) == 0;
    for (int64_t f = 0; f < F; ++f) {
      const double lo = loss[size_t(o * F + f)] / P, acc = double(correct[size_t(o * F + f)]) / P;
      if (random) {
        r.curve_loss_random.push_back(lo), r.curve_accuracy_random.push_back(acc);
        random_loss[size_t(f)] += lo, random_accuracy[size_t(f)] += acc;
      } else {
        r.curve_loss.push_back(lo), r.curve_accuracy.push_back(acc);
      }
    }
    if (random)
      ++randoms;
    else
      r.curve_orders.push_back(layout.orders[size_t(o)]);
  }
  r.curve_orders.push_back("random");
  for (const std::string& name : score_names(layout.orders)) {  // each score order's values, in the orders' order
    const std::vector<double>& v = scores.at(name);
    r.score.insert(r.score.end(), v.begin(), v.end());
  }
  for (int64_t f = 0; f < F; ++f) {
    r.curve_loss.push_back(random_loss[size_t(f)] / double(std::max<int64_t>(randoms, 1)));
    r.curve_accuracy.push_back(random_accuracy[size_t(f)] / double(std::max<int64_t>(randoms, 1)));
  }
  return r;
}

class PruneJob : public Job {
 public:
  // The scores of prune.scores_from, read and checked against the model before the output is
  // decided on: their digest is part of what a store must match.
  void check(const JobPlan& plan, MpiComm&) override {
    check_one_cpu_configuration(plan.config, "prune");
    scores_ = store_scores(plan.config, model_config_of(plan.model_dir), plan.model_dir);
    digest_ = scores_digest(plan.config, scores_);
  }
  std::string scores_sha256() const override { return digest_; }
  int execute(MpiComm& world, JobPlan& plan, const StopSignals& stop, const Stopwatch& clock, std::ostream& out) override;

 private:
  std::map<std::string, std::vector<double>> scores_;  // each of prune.score, [L*H]
  std::string digest_;
};

int PruneJob::execute(MpiComm& world, JobPlan& plan, const StopSignals& stop, const Stopwatch& clock, std::ostream&) {
  const Config& c = plan.config;
  PruneInputs in = load_prune_inputs(world, plan, std::move(scores_));
  const ModelConfig& mc = in.model->config();
  const int64_t N = in.prepared.samples.size(), LH = mc.num_layers * mc.num_heads;
  PruneLayout layout;
  const std::vector<WorkUnit> units = make_units(N, c.runtime.unit_size);
  layout.units = int64_t(units.size()), layout.layers = mc.num_layers, layout.heads = mc.num_heads;
  layout.orders = order_names(c);
  // A flag per unit and pass: pass 1's units, then pass 2's.
  const StoreStart start = start_store(world, plan, 2 * units.size(), prune_store_bytes(layout), "unit passes");
  std::vector<uint8_t> all_done = start.done;
  int64_t generation = start.generation;
  std::optional<PruneStore> store;
  if (start.resumed) {
    store.emplace(PruneStore::open(plan.store_path, world.mpi(), world.rank(), layout));
  } else {
    const StoreAttributes attrs =
        cpu_job_attributes(world, plan, *in.tokenizer, in.prepared.corpus_sha256, in.prepared.documents, in.threads);
    store.emplace(PruneStore::create(plan.store_path, world.mpi(), world.rank(), layout, attrs));
  }
  log_info("prune: " + std::to_string(N) + " samples in " + std::to_string(units.size()) + " units; model " + plan.model_dir + " (" +
           std::to_string(mc.num_layers) + " layers x " + std::to_string(mc.num_heads) + " heads); " + std::to_string(LH + 1) +
           " passes, then " + std::to_string(layout.orders.size()) + " orders x " + std::to_string(layout.fractions) + " fractions");
  const RoundOptions options{c.runtime.flush_units, c.runtime.flush_seconds};
  std::vector<std::vector<int64_t>> orders;
  RoundTimes times;
  for (int phase = 1; phase <= 2; ++phase) {
    if (phase == 2) {  // the orders from pass 1's sums, read back by every rank
      const Pass1Totals t = total(store->read_pass1(), LH);
      orders = make_orders(layout.orders, t, in.scores);
      std::vector<int64_t> flat;
      for (const auto& o : orders) flat.insert(flat.end(), o.begin(), o.end());
      store->write_orders(flat);
    }
    std::vector<uint8_t> done(all_done.begin() + ptrdiff_t(phase == 1 ? 0 : units.size()),
                              all_done.begin() + ptrdiff_t(phase == 1 ? units.size() : 2 * units.size()));
    PruneUnits work(in, *store, c, world, plan.progress_path, plan.identity_hash, generation, phase, &orders, &all_done);
    if (world.rank() == 0)
      log_info(phase == 1 ? "pass 1 of 2: the full model with gate gradients and entropies, and each head alone removed"
                          : "pass 2 of 2: every order at every fraction of heads removed");
    Progress progress(N, c.runtime.progress_seconds, world.rank() == 0, "samples");
    const RoundTimes t = run_rounds(world, units, done, options, work, stop, progress);
    times.compute += t.compute;
    generation = work.generation();
    if (world.rank() == 0 && work.forward_passes > 0) {
      std::ostringstream s;
      s.precision(3);
      const double forward = work.forward_seconds / double(work.forward_passes);
      s << "pass " << phase << " on rank 0: " << work.forward_passes
        << " forward passes over units (each from the first layer it changes), " << forward << " s each";
      if (work.gradient_passes > 0)
        s << "; importance (forward + backward, entropies) " << work.gradient_seconds / double(work.gradient_passes)
          << " s a unit = " << work.gradient_seconds / double(work.gradient_passes) / forward << " x their mean";
      log_info(s.str());
    }
  }
  const PruneResults results = results_of(layout, total(store->read_pass1(), LH), store->read_pass2(), N, in.scores);
  store->write_results(results);
  finish_store(world, plan, *store, clock.seconds(), std::to_string(N) + " samples", [&] {
    std::ostringstream details;
    details.precision(3);
    details << "(compute " << times.compute << " s on rank 0); full loss " << results.full_loss << ", accuracy " << results.full_accuracy;
    return details.str();
  });
  return kExitOk;
}

}  // namespace

int cmd_prune(const std::string& config_path, const std::vector<std::string>& overrides, std::ostream& out) {
  PruneJob job;
  return run_in_shell(job_kind_named("prune"), config_path, overrides, job, out);
}

}  // namespace ctxsim
