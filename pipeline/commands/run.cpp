// The job across MPI ranks. Rounds: in round k every rank computes the k-th of its pending work
// units (or nothing), then all ranks agree in one small all-reduce on errors, SIGTERM and
// progress, write their per-sample results collectively, and (when due) make the round durable:
// store flush, accumulators reduced to rank 0, resume state renamed into place.
#include "pipeline/commands/run.h"

#include <malloc.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <sstream>
#include <thread>

#include "ctxsim_revision.h"
#include "pipeline/job/statistics_options.h"
#include "pipeline/job/checkpoint.h"
#include "pipeline/job/comm.h"
#include "pipeline/commands/commands.h"
#include "pipeline/job/config.h"
#include "pipeline/job/log.h"
#include "pipeline/job/inputs.h"
#include "pipeline/job/work_units.h"
#include "pipeline/job/progress.h"
#include "pipeline/store/store.h"
#include "stages/analysis.h"
#include "stages/cpu_features.h"
#include "stages/error.h"
#include "stages/files.h"
#include "stages/safetensors.h"

namespace fs = std::filesystem;

namespace ctxsim {
namespace {

volatile std::sig_atomic_t g_terminate = 0;
extern "C" void on_sigterm(int) { g_terminate = 1; }

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }


std::vector<uint16_t> half_bits(const at::Tensor& t) {
  const at::Tensor h = t.to(at::kHalf).contiguous();
  std::vector<uint16_t> v(static_cast<size_t>(h.numel()));
  std::memcpy(v.data(), h.data_ptr(), v.size() * 2);
  return v;
}

// Test hooks (never set in production): CTXSIM_FAULT=<where>@<rank> makes that rank fail at
// "setup" or in its first "unit"; CTXSIM_UNIT_DELAY_MS slows every unit down.
bool fault_here(const std::string& where, int rank) {
  const char* f = std::getenv("CTXSIM_FAULT");
  return f && std::string(f) == where + "@" + std::to_string(rank);
}

// Runs fn on every rank; if it throws on any rank, the lowest failing rank prints its message
// and every rank stops with exit code 1 (no rank is left waiting in a collective).
template <class Fn>
void coordinated(Communicator& world, Fn&& fn) {
  std::string error;
  try {
    fn();
  } catch (const Error& e) {
    error = e.what();
  } catch (const std::exception& e) {
    error = std::string("internal error: ") + e.what();
  }
  int64_t first = error.empty() ? world.size() : world.rank();
  world.allreduce(&first, 1, ReduceOp::Min);
  if (first < world.size()) {
    if (world.rank() == first) log_error(error);
    throw JobExit(1);
  }
}

std::string broadcast_string(Communicator& world, std::string s) {
  int64_t n = int64_t(s.size());
  world.broadcast(&n, sizeof n, 0);
  s.resize(size_t(n));
  if (n) world.broadcast(s.data(), size_t(n), 0);
  return s;
}

}  // namespace

StatisticsOptions statistics_options(const Config& c, const Vocab& vocab) {
  StatisticsOptions opt;
  opt.rules = c.selection;
  opt.attention_threshold = c.statistics.attention_threshold;
  const auto separator_ids = [&](const std::vector<std::string>& tokens, const std::string& key) {
    std::vector<int64_t> ids;
    for (const auto& s : tokens) {
      const int32_t id = vocab.id(s);
      if (id < 0)
        throw Error(c.where(key), "'" + s + "' is not a token of the vocabulary",
                    "list separators as they are spelled in vocab.txt, e.g. \".\" \",\" \"[SEP]\"");
      ids.push_back(id);
    }
    return ids;
  };
  opt.separator_ids = separator_ids(c.statistics.separators, "statistics.separators");
  for (const auto& r : c.selection) opt.rule_separator_ids.push_back(separator_ids(r.separators, "selection"));
  for (int32_t id : {vocab.pad_id(), vocab.unk_id(), vocab.cls_id(), vocab.sep_id(), vocab.mask_id()})
    if (id >= 0) opt.special_ids.push_back(id);
  return opt;
}

JobExit::JobExit(int code) : std::runtime_error("job stopped with exit code " + std::to_string(code)), code_(code) {}

int run_job(const std::string& config_path, const std::vector<std::string>& overrides, std::ostream& out) {
  const auto t_start = Clock::now();
  ensure_mpi();
  MpiComm world(MPI_COMM_WORLD);
  const int rank = world.rank(), size = world.size();
  set_log_rank(rank, size);
  g_terminate = 0;
  std::signal(SIGTERM, on_sigterm);

  Config c;
  std::string dir, identity, store_path, progress_path;
  coordinated(world, [&] {
    c = load_config(config_path, overrides);
    check_paths(c);
    dir = model_dir(c);
    if (dir.empty())
      throw Error(c.where("model.path"), "a run needs a model",
                  "set model.path to a Hugging Face BERT folder (scripts/setup.sh makes data/models/bert-base-seed0) or model.name");
    // Every rank computes on the CPU today: a dtype it would only emulate stops the run here.
    require_native_dtype(c.model.dtype, c.where("model.dtype"));
    identity = identity_yaml(c);
    store_path = (fs::path(c.output.dir) / "store.h5").string();
    progress_path = checkpoint_path(store_path);
  });

  // What to do with the output folder: decided by rank 0, the same for everyone.
  enum Mode : int64_t { Create = 0, Resume = 1, AlreadyDone = 2 };
  int64_t mode = Create;
  std::optional<Checkpoint> checkpoint;
  coordinated(world, [&] {
    if (rank != 0) return;
    const StoreInfo existing = inspect_store(store_path);
    if (existing.exists && !c.output.overwrite && !existing.config_yaml.empty() && existing.config_yaml != identity)
      throw Error(c.where("output.dir"), store_path + " holds a run with a different config",
                  "choose another output.dir, or set output.overwrite=true to replace it");
    if (existing.exists && existing.complete && existing.config_yaml == identity && !c.output.overwrite) {
      mode = AlreadyDone;
      return;
    }
    checkpoint = read_checkpoint(progress_path);
    const std::string id_hash = sha256_bytes(reinterpret_cast<const uint8_t*>(identity.data()), identity.size());
    if (existing.exists && !existing.complete && existing.config_yaml == identity && checkpoint && checkpoint->identity == id_hash &&
        !c.output.overwrite)
      mode = Resume;
    else
      checkpoint.reset();
  });
  world.broadcast(&mode, sizeof mode, 0);
  if (mode == AlreadyDone) {
    log_info(store_path + " is already complete for this config; its summary:");
    return rank == 0 ? print_summary(store_path, SummaryOptions{}, out) : 0;
  }

  int threads = 0;
  PreparedSamples prepared;
  std::optional<BertTokenizer> tokenizer;
  std::optional<BertModel> model;
  LoadReport report;
  std::future<std::string> weights_sha256;  // rank 0 of a new store
  StatisticsOptions opt;
  std::vector<int64_t> examples;
  coordinated(world, [&] {
    if (fault_here("setup", rank)) throw Error(c.where("corpus.path"), "injected fault: the corpus is unreadable on this rank", "test hook");
    threads = configure_threads(c.runtime.threads, world.local_size());
    log_info(version_string() + "; config " + config_path + "; " + std::to_string(size) + " rank(s) x " + std::to_string(threads) +
             " thread(s), cpu");
    // The weights load (and, for a new store, are hashed) while the corpus is tokenized: the
    // three are independent, and together they are most of the start-up.
    const at::ScalarType dtype = torch_dtype(c.model.dtype);
    auto loading = std::async(std::launch::async, [&] { return BertModel::load(dir, dtype, &report); });
    if (mode == Create && rank == 0)
      weights_sha256 = std::async(std::launch::async, [w = (fs::path(dir) / "model.safetensors").string()] { return sha256_file(w); });
    tokenizer.emplace(make_tokenizer(c));
    prepared = prepare_samples(c, *tokenizer);
    model.emplace(loading.get());
    const BertConfig& mc = model->config();
    if (c.samples.seq_len > mc.max_position_embeddings)
      throw Error(c.where("samples.seq_len"), std::to_string(c.samples.seq_len) + " exceeds the model's max_position_embeddings (" +
                                                  std::to_string(mc.max_position_embeddings) + ")", "lower samples.seq_len");
    if (tokenizer->vocab().size() > mc.vocab_size)
      throw Error(c.where("model.vocab"), "the vocabulary has " + std::to_string(tokenizer->vocab().size()) +
                                              " tokens but the model's vocab_size is " + std::to_string(mc.vocab_size),
                  "use the vocab.txt that belongs to the model");
    opt = statistics_options(c, tokenizer->vocab());
    for (int64_t e : c.statistics.examples) {
      if (e >= prepared.samples.size())
        throw Error(c.where("statistics.examples"), "sample " + std::to_string(e) + " does not exist (" +
                                                        std::to_string(prepared.samples.size()) + " samples)",
                    "list sample ids below the sample count");
      examples.push_back(e);
    }
  });
  // What the set-up freed (the corpus text and its tokenization, load buffers) goes back to the
  // system before the long part: glibc keeps freed memory under our trim threshold (main.cpp).
  malloc_trim(0);
  // The large reductions: NCCL with runtime.device=cuda (CTXSIM_CUDA builds), else MPI.
  std::unique_ptr<Communicator> nccl;
  const bool cuda = c.runtime.device == Device::Cuda || (c.runtime.device == Device::Auto && cuda_device_visible());
  coordinated(world, [&] { nccl = make_reduction_comm(world, cuda); });
  Communicator& reducer = nccl ? *nccl : static_cast<Communicator&>(world);
  const SampleSet& samples = prepared.samples;
  const BertConfig& mc = model->config();
  if (!report.unexpected.empty()) {
    std::string list;
    for (const auto& u : report.unexpected) list += " " + u;
    log_info("warning: tensors in " + dir + "/model.safetensors that BertModel does not use:" + list);
  }
  log_info("samples: " + std::to_string(samples.size()) + " of " + std::to_string(samples.num_candidates) + " candidates, T=" +
           std::to_string(samples.seq_len) + "; model " + dir + " (" + std::to_string(mc.num_layers) + " layers, " +
           std::to_string(mc.num_heads) + " heads, " + name_of(c.model.dtype) + ")");

  const Analysis analysis(*model, opt, c.model.vector == HeadVector::Projected);
  // One accumulator per rank: rank 0's holds every unit so far (its own added as computed, the
  // others' at each flush, the reduction being in place at the root); another rank's holds its
  // units since the last flush.
  Accumulator acc(analysis.shape(samples.seq_len));
  const auto units = make_units(samples.size(), c.runtime.unit_size);
  std::vector<uint8_t> done(units.size(), 0);

  StoreLayout layout{samples.size(), samples.seq_len, mc.num_layers, mc.num_heads, mc.vocab_size, c.selection, examples, acc.fields()};
  const std::string id_hash = sha256_bytes(reinterpret_cast<const uint8_t*>(identity.data()), identity.size());
  int64_t generation = 0;
  if (mode == Resume) {
    if (rank == 0) {
      CTXSIM_CHECK(checkpoint->done.size() == units.size() && checkpoint->acc.size() == acc.buffer().size(),
                   "resume state does not match the plan");
      done = checkpoint->done;
      acc.buffer() = checkpoint->acc;
      generation = checkpoint->generation;
    }
    world.broadcast(done.data(), done.size(), 0);
  }
  const std::string vocab_path = c.model.vocab.empty() ? (fs::path(dir) / "vocab.txt").string() : c.model.vocab;
  std::optional<Store> store;
  if (mode == Resume) {
    store.emplace(Store::open(store_path, world.mpi(), rank, layout));
    const int64_t n_done = std::count(done.begin(), done.end(), uint8_t(1));
    log_info("resuming " + store_path + ": " + std::to_string(n_done) + " of " + std::to_string(units.size()) + " units done");
  } else {
    std::string model_sha256;  // attributes are written collectively: every rank passes rank 0's
    coordinated(world, [&] {
      if (rank == 0) model_sha256 = weights_sha256.get();
    });
    model_sha256 = broadcast_string(world, model_sha256);
    if (rank == 0) fs::create_directories(c.output.dir);
    world.barrier();
    if (rank == 0) fs::remove(progress_path);
    StoreAttributes attrs;
    attrs.config_yaml = identity;
    attrs.config_path = config_path;
    attrs.model_path = dir;
    attrs.model_sha256 = model_sha256;
    const std::string vocab_text = read_file_bytes(vocab_path);
    attrs.vocab_path = vocab_path;
    attrs.vocab_sha256 = sha256_bytes(reinterpret_cast<const uint8_t*>(vocab_text.data()), vocab_text.size());
    attrs.corpus = name_of(c.corpus.format) + ":" + c.corpus.path + " (" + std::to_string(prepared.documents) + " documents)";
    attrs.version = version_string();
    attrs.git_revision = CTXSIM_GIT_REVISION;
    attrs.started = utc_now();
    attrs.vector_kind = name_of(c.model.vector);
    attrs.dtype = name_of(c.model.dtype);
    attrs.ranks = size;
    attrs.threads = threads;
    attrs.devices = std::to_string(size) + " x cpu, reductions over " + reducer.name();
    store.emplace(Store::create(store_path, world.mpi(), rank, layout, attrs));
    store->write_samples(samples, vocab_text);
  }

  // ------------------------------------------------------------------ the rounds ---------
  const auto pending = pending_units(done);
  const int64_t n_rounds = rounds(pending, size);
  int64_t samples_done = 0;
  for (size_t u = 0; u < units.size(); ++u)
    if (done[u]) samples_done += units[u].count;
  Progress progress(samples.size(), c.runtime.progress_seconds, rank == 0);
  progress.update(samples_done);
  const int64_t R = static_cast<int64_t>(c.selection.size()), L = mc.num_layers, H = mc.num_heads, T = samples.seq_len;
  const int delay_ms = std::getenv("CTXSIM_UNIT_DELAY_MS") ? std::atoi(std::getenv("CTXSIM_UNIT_DELAY_MS")) : 0;
  double compute_s = 0, store_s = 0, flush_s = 0;
  BatchTimes batch_times;
  int64_t units_since_flush = 0;
  auto last_flush = Clock::now();

  for (int64_t k = 0; k < n_rounds; ++k) {
    const int64_t u = unit_of(pending, k, rank, size);
    std::vector<int32_t> anchor_token, high_pairs;
    std::vector<float> anchor_share;
    std::string error;
    const auto t0 = Clock::now();
    if (u >= 0) {
      try {
        if (fault_here("unit", rank)) throw Error("unit " + std::to_string(u), "injected fault in a stage", "test hook");
        const WorkUnit& unit = units[size_t(u)];
        anchor_token.assign(size_t(R * unit.count * L * H), -1);
        anchor_share.assign(anchor_token.size(), 0.0f);
        high_pairs.assign(anchor_token.size(), 0);
        for (const auto& [b0, B] : unit_batches(unit, c.runtime.batch_size)) {
          const BatchSamples bs{&samples.token_ids[size_t(b0 * T)], &samples.sentence_ids[size_t(b0 * T)],
                                &samples.n_valid[size_t(b0)], B, T, b0};
          std::vector<std::pair<int64_t, int64_t>> in_batch;  // (example index, row in batch)
          for (size_t e = 0; e < examples.size(); ++e)
            if (examples[e] >= b0 && examples[e] < b0 + B) in_batch.emplace_back(int64_t(e), examples[e] - b0);
          std::vector<std::vector<at::Tensor>> ex_att(in_batch.size()), ex_sim(in_batch.size()), ex_sel(in_batch.size());
          LayerHook keep_examples;
          if (!in_batch.empty())
            keep_examples = [&](int64_t, const at::Tensor& sim, const at::Tensor& attention, const BatchStatistics& stats) {
              for (size_t q = 0; q < in_batch.size(); ++q) {
                const int64_t row = in_batch[q].second;
                ex_att[q].push_back(attention[row].to(at::kFloat).clone());
                ex_sim[q].push_back(sim[row].to(at::kFloat).clone());
                std::vector<at::Tensor> per_rule;
                for (int64_t r = 0; r < R; ++r) per_rule.push_back(stats.selection_matrix(r, row));
                ex_sel[q].push_back(at::stack(per_rule));  // [R, H, T, T]
              }
            };
          const auto tb = Clock::now();
          const double started_after = batch_times.started() ? 0 : seconds_since_process_start();
          const PerSampleStats ps = analysis.run_batch(bs, acc, keep_examples);
          batch_times.add(since(tb), started_after);
          // [R, B, L, H] of the batch into [R, unit.count, L, H] of the unit.
          for (int64_t r = 0; r < R; ++r) {
            const size_t src = size_t(r * B * L * H), dst = size_t((r * unit.count + (b0 - unit.first)) * L * H), n = size_t(B * L * H);
            std::copy_n(ps.anchor_token.begin() + long(src), n, anchor_token.begin() + long(dst));
            std::copy_n(ps.anchor_share.begin() + long(src), n, anchor_share.begin() + long(dst));
            std::copy_n(ps.high_pairs.begin() + long(src), n, high_pairs.begin() + long(dst));
          }
          for (size_t q = 0; q < in_batch.size(); ++q) {
            const at::Tensor sel = at::stack(ex_sel[q], 1).contiguous();  // [R, L, H, T, T]
            std::vector<uint8_t> sel_bytes(size_t(sel.numel()));
            std::memcpy(sel_bytes.data(), sel.data_ptr(), sel_bytes.size());
            store->write_example(in_batch[q].first, half_bits(at::stack(ex_att[q])), half_bits(at::stack(ex_sim[q])), sel_bytes);
          }
        }
        if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      } catch (const Error& e) {
        error = e.what();
      } catch (const std::exception& e) {
        error = std::string("internal error: ") + e.what();
      }
    }
    compute_s += since(t0);

    // One small all-reduce: [failed ranks, SIGTERM seen, samples done, rank 0 wants a flush].
    const bool flush_due_by_time = rank == 0 && since(last_flush) >= c.runtime.flush_seconds;
    int64_t ctrl[4] = {error.empty() ? 0 : 1, g_terminate ? 1 : 0, u >= 0 && error.empty() ? units[size_t(u)].count : 0,
                       flush_due_by_time ? 1 : 0};
    world.allreduce(ctrl, 4, ReduceOp::Sum);
    if (ctrl[0] > 0) {
      int64_t first = error.empty() ? size : rank;
      world.allreduce(&first, 1, ReduceOp::Min);
      if (rank == first) log_error(error);
      throw JobExit(1);  // units of earlier rounds are already durable (flushed every round by default)
    }
    const auto t1 = Clock::now();
    const int64_t count = u >= 0 ? units[size_t(u)].count : 0;
    store->write_per_sample(u >= 0 ? units[size_t(u)].first : 0, count, anchor_token, anchor_share, high_pairs);
    store_s += since(t1);
    for (int r = 0; r < size; ++r) {
      const int64_t v = unit_of(pending, k, r, size);
      if (v >= 0) {
        done[size_t(v)] = 1;
        ++units_since_flush;
      }
    }
    samples_done += ctrl[2];
    const bool last = k + 1 == n_rounds;
    if (last || ctrl[1] > 0 || ctrl[3] > 0 || units_since_flush >= c.runtime.flush_units) {
      const auto t2 = Clock::now();
      // Durability order: the units' per-sample data, then the state that vouches for it.
      store->flush();
      reducer.reduce_sum_to_root(acc.buffer().data(), acc.buffer().size());
      if (rank == 0) write_checkpoint(progress_path, Checkpoint{id_hash, ++generation, done, acc.buffer()});
      else std::fill(acc.buffer().begin(), acc.buffer().end(), 0);
      units_since_flush = 0;
      last_flush = Clock::now();
      flush_s += since(t2);
    }
    progress.update(samples_done);
    if (ctrl[1] > 0 && !last) {
      progress.finish();
      log_info("SIGTERM: progress saved (" + std::to_string(samples_done) + " of " + std::to_string(samples.size()) +
               " samples); rerun the same command to resume. Exit code " + std::to_string(kExitInterrupted) + ".");
      throw JobExit(kExitInterrupted);
    }
  }
  progress.finish();

  // ------------------------------------------------------------------ the end ------------
  std::string bad;
  if (rank == 0) {
    const auto v = check_invariants(acc);
    if (!v.empty()) bad = v.front();
  }
  bad = broadcast_string(world, bad);
  if (!bad.empty()) {
    if (rank == 0) log_error("statistics invariant violated: " + bad + " (a bug: please report it)");
    throw JobExit(3);
  }
  const auto t3 = Clock::now();
  store->write_statistics(acc, c.statistics.attention_threshold, c.statistics.separators);
  // Per-rank compute seconds, the same string on every rank (attributes are collective).
  std::vector<int64_t> ms(size_t(size), 0);
  ms[size_t(rank)] = int64_t(compute_s * 1000);
  world.allreduce(ms.data(), ms.size(), ReduceOp::Sum);
  store->set_attribute("per_rank_seconds", join_each(ms, [](int64_t v) { return std::to_string(double(v) / 1000.0); }, " "));
  const double total = since(t_start);
  store->finish(utc_now(), total);
  store_s += since(t3);
  store.reset();
  if (rank == 0) fs::remove(progress_path);
  std::ostringstream timing;
  timing.precision(3);
  timing << "done: " << samples.size() << " samples in " << total << " s on " << size << " rank(s) (compute " << compute_s
         << " s on rank 0; store writes " << store_s << " s, progress flushes " << flush_s << " s); wrote " << store_path;
  log_info(timing.str());
  log_info(batch_times.describe() + " (rank 0)");
  if (rank != 0) return 0;
  // The report reads the store: the model and the samples are done with.
  model.reset();
  prepared = PreparedSamples{};
  malloc_trim(0);
  if (c.output.report) {
    std::ostringstream report_line;
    ReportArgs args;
    args.max_bytes = c.output.report_max_bytes;
    try {
      cmd_report(store_path, args, report_line);
    } catch (const Error& e) {
      // The run's results are safe: say so, and how to get the report without rerunning.
      throw Error(e.where(), "the run finished and its store is complete, but the report failed: " + e.problem(),
                  (e.fix().empty() ? std::string() : e.fix() + "; then ") + "ctxsim report " + store_path + " makes it without rerunning");
    }
    log_info(report_line.str().substr(0, report_line.str().find('\n')));
  }
  return print_summary(store_path, SummaryOptions{}, out);
}

}  // namespace ctxsim
