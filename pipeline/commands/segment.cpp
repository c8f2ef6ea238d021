// `ctxsim segment CONFIG`: topic segmentation on Choi's benchmark regenerated from the config's
// corpus split (docs/SPEC.md §6), every method on the same test documents, as an MPI job on the
// run's machinery: plan (config, the output folder) → inputs (tokenizer, corpus, model, the
// benchmark) → store (created or resumed) → rounds over the work units (one test document each,
// dealt round-robin, job/rounds.h) → finish (complete, the summary). A document's results do not
// depend on which rank computed it, so the store is the same for any rank count or resume.
#include <optional>
#include <sstream>

#include "pipeline/commands/commands.h"
#include "pipeline/commands/job_shell.h"
#include "pipeline/commands/run_units.h"
#include "pipeline/commands/segment_inputs.h"
#include "pipeline/job/config/inputs.h"
#include "pipeline/job/durable/checkpoint.h"
#include "pipeline/job/durable/run_lock.h"
#include "pipeline/job/parallel/agree.h"
#include "pipeline/job/parallel/comm.h"
#include "pipeline/job/parallel/log.h"
#include "pipeline/job/parallel/rounds.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/segment_store.h"
#include "stages/base/cpu_features.h"
#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/stopwatch.h"
#include "stages/model/model.h"
#include "stages/segment/encode.h"

namespace ctxsim {
namespace {

// ---------------------------------------------------------------------- inputs ------------
struct SegmentInputs {
  int threads = 0;
  std::optional<JobTokenizer> tokenizer;
  TokenizedInputs text;
  std::optional<TransformerEncoder> model;
  Benchmark bench;
  segment::MethodOptions options;
  int32_t window = 0;
};

SegmentInputs load_segment_inputs(MpiComm& world, const JobPlan& p) {
  SegmentInputs in;
  const Config& c = p.config;
  on_every_rank(world, [&] {
    in.threads = configure_threads(c.runtime.threads, world.local_size());
    log_info(version_string() + "; segment " + p.config_path + "; " + std::to_string(world.size()) + " rank(s) x " +
             std::to_string(in.threads) + " thread(s)" + busy_cores_note() + "; " + configure_compute_libraries().describe() +
             "; idle threads: " + openmp_wait_policy());
    in.tokenizer.emplace(make_tokenizer(c));
    in.text = read_and_tokenize(c, *in.tokenizer);
    in.model.emplace(TransformerEncoder::load(p.model_dir, torch_dtype(c.model.dtype)));
    in.window = segment_window(c, in.model->config());
    check_vocab_fits(c, in.tokenizer->vocab(), in.model->config().vocab_size);
    in.bench = make_benchmark(c, in.text.corpus);
    if (const std::string note = cut_sentences_note(c, in.bench, in.text.corpus, in.window, in.tokenizer->frame); !note.empty())
      log_info(note);
    in.options = segment_method_options(c, *in.tokenizer);
  });
  return in;
}

SegmentLayout segment_layout(const SegmentInputs& in) {
  SegmentLayout l;
  l.documents = int64_t(in.bench.documents.size());
  for (const auto& d : in.bench.documents) l.max_gaps = std::max<int64_t>(l.max_gaps, d.total_sentences - 1);
  l.layers = in.model->config().num_layers;
  l.heads = in.model->config().num_heads;
  l.segments = segment::kChoiSegments;
  l.methods = segment::method_names(l.layers);
  l.subsets = in.bench.subsets;
  l.example_sentences = in.bench.documents.empty() ? 0 : in.bench.documents[0].total_sentences;
  return l;
}

std::vector<SegmentDocumentInfo> document_infos(const Benchmark& b) {
  std::vector<SegmentDocumentInfo> out;
  for (size_t d = 0; d < b.documents.size(); ++d) {
    SegmentDocumentInfo info;
    info.subset = b.subset_of[d];
    info.sentences = b.documents[d].total_sentences;
    for (const auto& s : b.documents[d].segments) info.parts.insert(info.parts.end(), {s.document, s.sentences});
    info.gold = b.documents[d].boundaries;
    out.push_back(std::move(info));
  }
  return out;
}

// ----------------------------------------------------------------------- units ------------
SegmentDocumentResult lay_out(const segment::DocumentResult& r, const SegmentLayout& l) {
  SegmentDocumentResult out;
  const size_t G = size_t(std::max<int64_t>(1, l.max_gaps));
  out.boundaries.assign(l.methods.size() * G, -1);
  for (size_t m = 0; m < r.boundaries.size(); ++m) {
    std::copy(r.boundaries[m].begin(), r.boundaries[m].end(), out.boundaries.begin() + ptrdiff_t(m * G));
    out.count.push_back(int32_t(r.boundaries[m].size()));
    out.pk.push_back(r.scores[m].pk);
    out.window_diff.push_back(r.scores[m].window_diff);
  }
  for (const auto& h : r.heads) out.head_pk.push_back(h.pk), out.head_window_diff.push_back(h.window_diff);
  return out;
}

class SegmentUnits final : public UnitWork {
 public:
  SegmentUnits(const SegmentInputs& in, const SegmentLayout& layout, SegmentStore& store, const Config& c, MpiComm& world,
               std::string progress_path, std::string identity, int64_t generation)
      : in_(in), layout_(layout), store_(store), config_(c), world_(world), progress_path_(std::move(progress_path)),
        identity_(std::move(identity)), generation_(generation) {}

  void compute(const WorkUnit& unit) override {
    unit_delay_for_tests();
    const size_t d = size_t(unit.first);
    segment::EncodedDocument e;
    const segment::DocumentResult r = benchmark_document(config_, in_.bench, in_.text.corpus, d, *in_.model, in_.tokenizer->frame,
                                                         in_.options, in_.window, d == 0 ? &e : nullptr);
    result_ = lay_out(r, layout_);
    if (d == 0)
      for (int64_t l = 0; l < e.L; ++l) {
        const std::vector<double> sim = e.similarity(l, -1);
        result_.example.insert(result_.example.end(), sim.begin(), sim.end());
      }
  }
  void write(const WorkUnit* unit) override {
    store_.write_document(unit ? unit->first : 0, unit ? &result_ : nullptr);  // the unit computed this round
  }
  void make_durable(const std::vector<uint8_t>& done) override {
    store_.flush();
    if (world_.rank() == 0) write_checkpoint(progress_path_, Checkpoint{identity_, ++generation_, done, {}});
  }

 private:
  const SegmentInputs& in_;
  const SegmentLayout& layout_;
  SegmentStore& store_;
  const Config& config_;
  MpiComm& world_;
  std::string progress_path_, identity_;
  int64_t generation_ = 0;
  SegmentDocumentResult result_;
};

}  // namespace

namespace {

class SegmentJob : public Job {
 public:
  void check(const JobPlan& plan, MpiComm&) override { check_one_cpu_configuration(plan.config, "segment"); }
  int execute(MpiComm& world, JobPlan& plan, const StopSignals& stop, const Stopwatch& clock, std::ostream& out) override;
};

int SegmentJob::execute(MpiComm& world, JobPlan& plan, const StopSignals& stop, const Stopwatch& clock, std::ostream&) {
  SegmentInputs in = load_segment_inputs(world, plan);
  const SegmentLayout layout = segment_layout(in);
  std::vector<WorkUnit> units = make_units(layout.documents, 1);
  const StoreStart start = start_store(world, plan, units.size(), segment_store_bytes(layout), "documents");
  std::vector<uint8_t> done = start.done;
  std::optional<SegmentStore> store;
  if (start.resumed) {
    store.emplace(SegmentStore::open(plan.store_path, world.mpi(), world.rank(), layout));
  } else {
    const StoreAttributes attrs =
        cpu_job_attributes(world, plan, *in.tokenizer, in.text.corpus_sha256, int64_t(in.text.corpus.documents.size()), in.threads);
    store.emplace(SegmentStore::create(plan.store_path, world.mpi(), world.rank(), layout, attrs, document_infos(in.bench)));
  }
  log_info("benchmark: " + std::to_string(layout.documents) + " test documents (" + join(layout.subsets) + "), " +
           std::to_string(layout.methods.size()) + " methods; model " + plan.model_dir + " (" + std::to_string(layout.layers) +
           " layers, " + std::to_string(layout.heads) + " heads), window T=" + std::to_string(in.window));
  SegmentUnits work(in, layout, *store, plan.config, world, plan.progress_path, plan.identity_hash, start.generation);
  Progress progress(layout.documents, plan.config.runtime.progress_seconds, world.rank() == 0, "documents");
  const RoundOptions options{plan.config.runtime.flush_units, plan.config.runtime.flush_seconds};
  const RoundTimes times = run_rounds(world, units, done, options, work, stop, progress);
  finish_store(world, plan, *store, clock.seconds(), std::to_string(layout.documents) + " documents", [&] {
    std::ostringstream details;
    details.precision(3);
    details << "(compute " << times.compute << " s on rank 0)";
    return details.str();
  });
  return kExitOk;
}

}  // namespace

int cmd_segment(const std::string& config_path, const std::vector<std::string>& overrides, std::ostream& out) {
  SegmentJob job;
  return run_in_shell(job_kind_named("segment"), config_path, overrides, job, out);
}

}  // namespace ctxsim
