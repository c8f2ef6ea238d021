// `ctxsim pretrain`: language-model training of a model of any family with a head (pretrain.family:
// masked-LM for the encoders, next-token for the decoders, SPEC §8's objectives) on the config's
// corpus, data-parallel over MPI ranks, kill-safe and resumable, saved in Hugging Face's layout. A
// straight line of phases over the job scaffold that `run` uses: plan (config, the output folder
// and its lock, a checkpoint to resume) → data (tokenizer, training and held-out windows, the
// unigram baseline) → model (BERT's initialisation, or the checkpoint) → the rounds, one
// training step each, shared by every rank (job/rounds.h) → export (the trained model, the loss
// curves). Every draw (sample order, masks, dropout) is a function of (seed, sample), so the
// batches, masks and dropout do not depend on the rank count.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "pipeline/commands/commands.h"
#include "pipeline/commands/job_shell.h"
#include "pipeline/commands/run_units.h"
#include "pipeline/job/config/config.h"
#include "pipeline/job/config/inputs.h"
#include "pipeline/job/durable/train_checkpoint.h"
#include "pipeline/job/parallel/agree.h"
#include "pipeline/job/parallel/comm.h"
#include "pipeline/job/parallel/log.h"
#include "pipeline/job/parallel/progress.h"
#include "pipeline/job/parallel/rounds.h"
#include "pipeline/job/parallel/signals.h"
#include "pipeline/job/parallel/work_units.h"
#include "pipeline/report/pretrain_figures.h"
#include "stages/base/cpu_features.h"
#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/model_folder.h"
#include "stages/base/stopwatch.h"
#include "stages/model/mlm.h"
#include "stages/model/model.h"
#include "stages/model/random_checkpoint.h"
#include "stages/prune/prune.h"
#include "stages/text/pretraining_data.h"

namespace fs = std::filesystem;

namespace ctxsim {
namespace {

// The random streams of a training run, all derived from pretrain.seed.
enum Stream : uint64_t { kOrder = 1, kMasks = 2, kDropout = 3, kEvalMasks = 4 };
uint64_t stream(const Config& c, Stream s) { return mix_key(uint64_t(c.pretrain.seed), s); }

// ------------------------------------------------------------------- history --------------
// One row per step; the held-out columns are NaN except at evaluations.
struct StepRow {
  int64_t step = 0;  // 1-based: the row of the step-th update
  double learning_rate = 0, train_loss = 0, grad_norm = 0;
  double heldout_loss = std::nan(""), heldout_accuracy = std::nan("");
  uint64_t batch_digest = 0;  // of the global batch's masked inputs and labels: equal on any rank count
};

std::string history_json(const std::vector<StepRow>& rows) {
  nlohmann::json j = nlohmann::json::array();
  const auto num = [](double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); };
  for (const auto& r : rows)
    j.push_back({r.step, r.learning_rate, r.train_loss, r.grad_norm, num(r.heldout_loss), num(r.heldout_accuracy), r.batch_digest});
  return j.dump();
}

std::vector<StepRow> parse_history(const std::string& text, const std::string& path) {
  std::vector<StepRow> rows;
  try {
    const auto num = [](const nlohmann::json& v) { return v.is_null() ? std::nan("") : v.get<double>(); };
    for (const auto& r : nlohmann::json::parse(text))
      rows.push_back({r.at(0).get<int64_t>(), r.at(1).get<double>(), r.at(2).get<double>(), r.at(3).get<double>(), num(r.at(4)),
                      num(r.at(5)), r.size() > 6 ? r.at(6).get<uint64_t>() : 0});
  } catch (const nlohmann::json::exception& e) {
    throw Error(path, std::string("the loss history in the checkpoint is damaged: ") + e.what(),
                "delete the checkpoint to train from the start");
  }
  return rows;
}

// ---------------------------------------------------------------------- plan --------------
// Pretraining's outputs and resume state, beside the shell's plan (which holds the lock).
struct TrainPlan {
  Config config;
  std::string config_path, identity, checkpoint_path, model_out, init_out;
  std::optional<TrainCheckpoint> checkpoint;  // rank 0, when resuming
  int64_t steps_done = 0;                     // every rank
};

// What this config's model looks like (pretrain.family's base with the shape keys), or an error
// naming the key.
ModelConfig model_shape(const Config& c, Family family, int64_t vocab_size) {
  const auto& p = c.pretrain;
  if (p.hidden % p.heads != 0)
    throw Error(c.where("pretrain.heads"), std::to_string(p.heads) + " heads do not divide pretrain.hidden=" + std::to_string(p.hidden),
                "choose heads that divide the hidden size (e.g. hidden 256 with 4 or 8 heads)");
  ModelConfig m = ModelConfig::of_family(family);
  m.vocab_size = vocab_size;
  m.hidden_size = p.hidden;
  m.num_layers = p.layers;
  m.num_heads = p.heads;
  m.intermediate_size = p.intermediate;
  // Positions for samples of T tokens (RoBERTa's start after its padding id).
  m.max_position_embeddings = c.samples.seq_len + (m.pad_position >= 0 ? m.pad_position + 1 : 0);
  return m;
}

void check_training_config(const Config& c, int ranks) {
  if (c.model.vocab.empty())
    throw Error(c.where("model.vocab"), "pretraining needs the vocabulary it trains with",
                "set model.vocab to the family's tokenizer (scripts/setup.sh writes data/vocab/bert-base-uncased.txt and data/vocab/gpt2)");
  if (c.corpus.heldout_every < 2)
    throw Error(
        c.where("corpus.heldout_every"),
        "pretraining holds documents out for its held-out loss; " + std::string(c.corpus.heldout_every == 0 ? "none are" : "all would be"),
        "set corpus.heldout_every to N >= 2 (every N-th document is held out; the recipe uses 10)");
  if (c.pretrain.batch_size < ranks)
    throw Error(c.where("pretrain.batch_size"),
                std::to_string(c.pretrain.batch_size) + " samples a step cannot be shared by " + std::to_string(ranks) + " ranks",
                "raise pretrain.batch_size to at least the rank count, or run on fewer ranks");
  if (c.pretrain.warmup_steps > c.pretrain.steps)
    throw Error(
        c.where("pretrain.warmup_steps"),
        std::to_string(c.pretrain.warmup_steps) + " warmup steps exceed the " + std::to_string(c.pretrain.steps) + " steps of the run",
        "lower pretrain.warmup_steps (BERT warms up over about 1% to 10% of the steps)");
}

// On every rank, inside the shell's checks.
TrainPlan train_plan(const JobPlan& job, int ranks) {
  TrainPlan p;
  const Config& c = p.config = job.config;
  p.config_path = job.config_path;
  check_training_config(c, ranks);
  p.identity = job.identity;
  p.checkpoint_path = train_checkpoint_path(c.output.dir);
  p.model_out = c.pretrain.model_out.empty() ? (fs::path(c.output.dir) / "model").string() : c.pretrain.model_out;
  p.init_out = c.pretrain.init_out.empty() ? (fs::path(c.output.dir) / "init").string() : c.pretrain.init_out;
  if (same_path(p.model_out, p.init_out))
    throw Error(c.where("pretrain.init_out"),
                "'" + p.init_out +
                    "' is the folder of pretrain.model_out too: the step-0 weights and the "
                    "trained ones would overwrite each other",
                "give pretrain.init_out and pretrain.model_out different folders (or leave both unset)");
  return p;
}

// ---------------------------------------------------------------------- model folders -----
// A model folder is someone's work: pretraining writes into one only when it is empty or missing,
// or when this job wrote it (exports.json in output.dir records each folder it wrote with the
// SHA-256 of its weights and the job's identity) and nobody changed its weights since; anything
// else takes output.overwrite=true.
std::string exports_path(const Config& c) { return (fs::path(c.output.dir) / "exports.json").string(); }

nlohmann::json read_exports(const Config& c) {
  std::error_code ec;
  if (!fs::exists(exports_path(c), ec)) return nlohmann::json::object();
  const auto j = nlohmann::json::parse(read_file_bytes(exports_path(c), kMaxJsonBytes), nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j : nlohmann::json::object();  // a damaged record vouches for nothing
}

void record_export(const TrainPlan& p, const std::string& dir) {
  nlohmann::json j = read_exports(p.config);
  j[resolved_path(dir)] = {{"model_sha256", ModelFolder(dir).weights_sha256()}, {"identity", p.identity}};
  atomic_write(exports_path(p.config), j.dump(2) + "\n");
}

// A folder that is empty but for what this job itself keeps in output.dir (its run lock, its
// checkpoint, its record of exports): a model folder equal to output.dir starts out so.
bool holds_only_bookkeeping(const std::string& dir, const Config& c) {
  std::error_code ec;
  if (!same_path(dir, c.output.dir)) return fs::is_empty(dir, ec);
  const std::set<std::string> ours = {"run.lock", fs::path(exports_path(c)).filename().string(),
                                      fs::path(train_checkpoint_path(c.output.dir)).filename().string()};
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (!ours.count(e.path().filename().string())) return false;
  return true;
}

void check_model_folders(const TrainPlan& p) {
  const Config& c = p.config;
  if (c.output.overwrite) return;
  const nlohmann::json exports = read_exports(c);
  for (const auto& [dir, key] : {std::pair{p.model_out, "pretrain.model_out"}, std::pair{p.init_out, "pretrain.init_out"}}) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec) || holds_only_bookkeeping(dir, c)) continue;
    const ModelFolder folder(dir);
    const auto it = exports.find(resolved_path(dir));
    if (it != exports.end() && it->is_object() && it->value("identity", "") == p.identity && folder.has(ModelFolder::kWeights) &&
        it->value("model_sha256", "") == folder.weights_sha256())
      continue;
    const std::string where = c.pretrain.model_out.empty() && c.pretrain.init_out.empty() ? c.where("output.dir") : c.where(key);
    throw Error(where,
                "'" + dir + "' already holds files that this pretraining did not write (another model, or one of another config); " +
                    "training would replace them",
                "choose another output.dir (or " + std::string(key) + "), or set output.overwrite=true to replace that folder");
  }
}

// Rank 0, under the shell's lock: whether a checkpoint of this config is there to resume.
void find_checkpoint(MpiComm& world, TrainPlan& p, int64_t params) {
  // The checkpoint first (a different config says what differs), then the model folders.
  const auto check_checkpoint = [&] {
    const Config& c = p.config;
    if (c.output.overwrite) return;
    p.checkpoint = read_train_checkpoint(p.checkpoint_path);
    if (!p.checkpoint) return;
    const auto differences = identity_differences(p.checkpoint->identity, c, job_kind_named("pretrain"));
    if (!differences.empty())
      throw Error(c.where("output.dir"), p.checkpoint_path + " is the checkpoint of a different config: " + join(differences, "; "),
                  "choose another output.dir, or set output.overwrite=true to train from the start");
    if (int64_t(p.checkpoint->params.size()) != params)
      throw Error(p.checkpoint_path,
                  "holds " + std::to_string(p.checkpoint->params.size()) + " parameters, the model of this config has " +
                      std::to_string(params) + " (a checkpoint of another ctxsim version?)",
                  "set output.overwrite=true to train from the start, or use the ctxsim that wrote it");
    // A checkpoint that contradicts itself is damaged, whatever its digest says.
    const std::string damaged = "the checkpoint is damaged: set output.overwrite=true to train from the start";
    const int64_t steps = p.checkpoint->steps_done;
    if (steps < 0 || steps > c.pretrain.steps)
      throw Error(p.checkpoint_path,
                  "records " + std::to_string(steps) + " steps done, outside 0 … pretrain.steps (" + std::to_string(c.pretrain.steps) + ")",
                  damaged);
    const size_t rows = parse_history(p.checkpoint->history_json, p.checkpoint_path).size();
    if (int64_t(rows) != steps)
      throw Error(p.checkpoint_path,
                  "its loss history has " + std::to_string(rows) + " rows but it records " + std::to_string(steps) + " steps done",
                  damaged);
    p.steps_done = steps;
  };
  on_every_rank(world, [&] {
    if (world.rank() != 0) return;
    check_checkpoint();
    check_model_folders(p);
  });
  world.broadcast(&p.steps_done, sizeof p.steps_done, 0);
}

// ---------------------------------------------------------------------- data --------------
struct TrainData {
  std::optional<JobTokenizer> tokenizer;
  std::vector<std::pair<std::string, std::string>> tokenizer_files;  // what the exported folders hold
  bool causal = false;                                               // next-token targets, else masks
  SampleSet train, eval;
  std::vector<int32_t> eval_input, eval_labels;  // [E, T] fixed masks
  MaskSpec masks;
  UnigramBaseline unigram;
  double unigram_loss = 0, unigram_accuracy = 0;
  ModelConfig model;

  // A sample's inputs and targets (SPEC §8): its masks drawn from `key`, or the next tokens.
  int32_t targets(const int32_t* ids, int32_t T, int32_t n_valid, uint64_t key, int32_t* input, int32_t* labels) const {
    return causal ? prune::next_token_targets(ids, T, n_valid, input, labels) : mask_sample(ids, T, n_valid, masks, key, input, labels);
  }
};

SampleSet windows_of(const Config& c, const TokenizedCorpus& corpus, DocumentSplit split, int64_t count, const SampleFrame& frame) {
  SampleOptions o = sample_options(c);
  o.documents = {split, c.corpus.heldout_every};
  o.num_samples = count;
  o.seed = stream(c, kEvalMasks);
  return at_config_keys(c, [&] { return build_samples(corpus, o, frame); });
}

TrainData load_training_data(MpiComm& world, const TrainPlan& p) {
  TrainData d;
  const Config& c = p.config;
  on_every_rank(world, [&] {
    d.tokenizer.emplace(make_tokenizer(c));
    const Vocab& vocab = d.tokenizer->vocab();
    const FamilySpec& family = *d.tokenizer->family;
    if (c.pretrain.family != family.model_type)  // model.path or model.name named a folder of another family
      throw Error(c.where("pretrain.family"),
                  "is " + c.pretrain.family + ", and model.path/model.name name a " + family.display +
                      " folder; pretraining trains pretrain.family's layout from random weights",
                  "remove model.path and model.name from the pretraining config, or set pretrain.family=" + std::string(family.model_type));
    const LmHead& head = family.lm_head;
    d.causal = head.objective == LmObjective::Causal;
    const int32_t mask_id = d.causal ? -1 : vocab.id(head.mask_token);
    if (!d.causal && mask_id < 0)
      throw Error(c.where("model.vocab"), c.model.vocab + " has no " + head.mask_token + " token, which masked-LM training needs",
                  std::string("give the tokenizer of a ") + family.display + " (its model folder, or what 'ctxsim init-model --family " +
                      family.model_type + "' writes)");
    int64_t written = 0;
    d.tokenizer_files = model_tokenizer_files(family.family, c.model.vocab, &written);
    if (written != vocab.size())
      throw Error(c.where("model.vocab"),
                  c.model.vocab + " lacks special tokens a " + family.display + " has (its folder would hold " + std::to_string(written) +
                      " tokens, the training " + std::to_string(vocab.size()) + ")",
                  "give the tokenizer of a " + std::string(family.display) + " model folder (what 'ctxsim init-model --family " +
                      family.model_type + "' writes has them)");
    d.model = model_shape(c, family.family, vocab.size());
    const TokenizedInputs inputs = read_and_tokenize(c, *d.tokenizer);
    const SampleFrame& frame = d.tokenizer->frame;
    d.train = windows_of(c, inputs.corpus, DocumentSplit::Train, std::numeric_limits<int64_t>::max(), frame);  // all
    d.eval = windows_of(c, inputs.corpus, DocumentSplit::Heldout, c.pretrain.eval_samples, frame);
    d.masks = MaskSpec{c.pretrain.mask_fraction, mask_id, vocab.size(), vocab.special_ids()};
    // The unigram model of the training documents' text.
    std::vector<int64_t> counts(size_t(vocab.size()), 0);
    const DocumentFilter train_docs{DocumentSplit::Train, c.corpus.heldout_every};
    for (size_t doc = 0; doc < inputs.corpus.documents.size(); ++doc)
      if (train_docs.keeps(int64_t(doc)))
        for (const auto& s : inputs.corpus.documents[doc].sentences)
          for (int32_t id : s.ids) ++counts[size_t(id)];
    d.unigram = unigram_baseline(counts, d.masks.special_ids);
    const int64_t E = d.eval.size(), T = d.eval.seq_len;
    d.eval_input.resize(size_t(E * T));
    d.eval_labels.resize(size_t(E * T));
    for (int64_t i = 0; i < E; ++i)
      d.targets(&d.eval.token_ids[size_t(i * T)], int32_t(T), d.eval.n_valid[size_t(i)], mix_key(stream(c, kEvalMasks), uint64_t(i)),
                &d.eval_input[size_t(i * T)], &d.eval_labels[size_t(i * T)]);
    d.unigram_loss = d.unigram.loss(d.eval_labels);
    d.unigram_accuracy = d.unigram.accuracy(d.eval_labels);
  });
  log_info("pretrain: " + std::to_string(d.train.size()) + " training windows of T=" + std::to_string(d.train.seq_len) + " from the " +
           "training documents, " + std::to_string(d.eval.size()) + " held-out samples (every " + std::to_string(c.corpus.heldout_every) +
           "th document); model " + d.tokenizer->family->display + ", " + std::to_string(d.model.num_layers) + " layers, hidden " +
           std::to_string(d.model.hidden_size) + ", " + std::to_string(d.model.num_heads) + " heads, vocabulary " +
           std::to_string(d.model.vocab_size));
  return d;
}

// ---------------------------------------------------------------------- export ------------
// A Hugging Face folder of the family's language-model class (BertForMaskedLM, GPT2LMHeadModel,
// ...): config.json, model.safetensors, the tokenizer's files (each written atomically); a
// WordPiece tokenizer's options in its tokenizer_config.json.
void export_model(const std::string& dir, const MlmModel& model, const TrainData& d, const Config& c, const std::string& what) {
  make_folder(dir, what);
  const DType dtype = c.pretrain.save_dtype == SaveDtype::Float16 ? DType::F16 : DType::F32;
  const ModelFolder out(dir);
  write_safetensors(out.weights(), model.export_tensors(dtype), {{"format", "pt"}});
  atomic_write(out.config(), model.config().to_json(family_spec(model.config().family).mlm_class, c.pretrain.dropout));
  for (const auto& [name, bytes] : d.tokenizer_files) atomic_write(out.file(name.c_str()), bytes);
  // The lower-casing the training used goes with a WordPiece vocabulary.
  if (const auto* wordpiece = dynamic_cast<const BertTokenizer*>(&**d.tokenizer)) {
    nlohmann::ordered_json t;
    t["do_lower_case"] = wordpiece->options().lower_case;
    t["model_max_length"] = model.config().max_position_embeddings;
    t["tokenizer_class"] = "BertTokenizer";
    atomic_write(out.tokenizer_config(), t.dump(2) + "\n");
  }
}

// loss.csv and the loss curves (loss.svg, loss.png) in output.dir.
void write_curves(const std::string& dir, const std::vector<StepRow>& rows, const TrainData& d, int64_t batch) {
  std::ostringstream csv;
  csv.precision(7);
  csv << "step,samples,learning_rate,train_loss,grad_norm,heldout_loss,heldout_accuracy,unigram_loss,unigram_accuracy,batch_digest\n";
  const auto cell = [](double v) { return std::isnan(v) ? std::string() : std::to_string(v); };
  for (const auto& r : rows)
    csv << r.step << ',' << r.step * batch << ',' << r.learning_rate << ',' << r.train_loss << ',' << r.grad_norm << ','
        << cell(r.heldout_loss) << ',' << cell(r.heldout_accuracy) << ',' << cell(std::isnan(r.heldout_loss) ? NAN : d.unigram_loss) << ','
        << cell(std::isnan(r.heldout_loss) ? NAN : d.unigram_accuracy) << ',' << std::hex << r.batch_digest << std::dec << '\n';
  atomic_write((fs::path(dir) / "loss.csv").string(), csv.str());
  std::vector<report::TrainingPoint> points;
  for (const auto& r : rows) points.push_back({r.step, r.train_loss, r.heldout_loss, r.heldout_accuracy});
  report::write_training_curves(dir, points, {d.unigram_loss, d.unigram_accuracy}, batch, d.causal);
}

// ---------------------------------------------------------------------- steps -------------
// One training step per unit, shared by every rank: compute() runs forward and backward over
// this rank's rows of the global batch (a failure here is agreed on before any collective);
// write() sums the gradients over the ranks, clips, updates, and evaluates when due;
// make_durable() writes the checkpoint.
class TrainingSteps final : public UnitWork {
 public:
  TrainingSteps(MpiComm& world, const TrainPlan& plan, const TrainData& data, MlmModel& model, AdamWState& adam,
                std::vector<StepRow>& history)
      : world_(world), plan_(plan), c_(plan.config), data_(data), model_(model), adam_(adam), history_(history), decay_(model.decay_mask()),
        order_(data.train.size(), stream(c_, kOrder)) {}

  void compute(const WorkUnit& unit) override {
    const int64_t B = c_.pretrain.batch_size, T = data_.train.seq_len, R = world_.size(), r = world_.rank();
    const int64_t lo = B * r / R, hi = B * (r + 1) / R, n = hi - lo;
    std::vector<int32_t> input(static_cast<size_t>(n * T)), labels(static_cast<size_t>(n * T));
    std::vector<int32_t> scratch_in(static_cast<size_t>(T)), scratch_lab(static_cast<size_t>(T));
    std::vector<int16_t> n_valid(static_cast<size_t>(n));
    std::vector<uint64_t> keys(static_cast<size_t>(n));
    if (fault_here("unit", int(r))) throw Error("pretrain step " + std::to_string(unit.index + 1), "injected fault", "test hook");
    global_predicted_ = 0;
    batch_digest_ = uint64_t(unit.index);
    for (int64_t row = 0; row < B; ++row) {  // every row's mask (cheap), so that each rank knows the global count
      const int64_t g = unit.first + row;
      const int64_t w = order_.window(g);
      const bool mine = row >= lo && row < hi;
      int32_t* in = mine ? &input[size_t((row - lo) * T)] : scratch_in.data();
      int32_t* lab = mine ? &labels[size_t((row - lo) * T)] : scratch_lab.data();
      global_predicted_ += data_.targets(&data_.train.token_ids[size_t(w * T)], int32_t(T), data_.train.n_valid[size_t(w)],
                                         mix_key(stream(c_, kMasks), uint64_t(g)), in, lab);
      for (int64_t t = 0; t < T; ++t) batch_digest_ = mix_key(batch_digest_, uint64_t(uint32_t(in[t])) << 32 | uint32_t(lab[t]));
      if (mine) {
        n_valid[size_t(row - lo)] = data_.train.n_valid[size_t(w)];
        keys[size_t(row - lo)] = mix_key(stream(c_, kDropout), uint64_t(g));
      }
    }
    if (global_predicted_ == 0)
      throw Error("pretrain step " + std::to_string(unit.index), "no token of the batch can be predicted", "use a corpus with text");
    model_.gradients().zero_();
    const MlmBatch batch = make_mlm_batch(input.data(), labels.data(), n_valid.data(), n, T, std::move(keys));
    const MlmResult res = model_.train_step(batch, c_.pretrain.dropout, 1.0 / double(global_predicted_));
    local_loss_ = res.loss_sum;
    unit_delay_for_tests();
    if (!std::isfinite(local_loss_))
      throw Error("pretrain step " + std::to_string(unit.index + 1), "the loss is not finite (NaN or inf)",
                  "lower pretrain.learning_rate or raise pretrain.warmup_steps");
  }

  void write(const WorkUnit* unit) override {
    const int64_t step = unit->index;
    world_.sum_to_all(model_.gradients().data_ptr<float>(), size_t(model_.gradients().numel()));
    double loss = local_loss_;
    world_.sum_to_all(&loss, 1);
    StepRow row;
    row.step = step + 1;
    row.batch_digest = batch_digest_;
    row.train_loss = loss / double(global_predicted_);
    row.grad_norm = clip_grad_norm(model_.gradients(), c_.pretrain.clip_norm);
    row.learning_rate = learning_rate(step, c_.pretrain.steps, c_.pretrain.warmup_steps, c_.pretrain.learning_rate);
    adamw_update(model_.parameters(), model_.gradients(), decay_, adam_, row.learning_rate,
                 AdamWOptions{0.9, 0.999, 1e-6, c_.pretrain.weight_decay});
    if ((step + 1) % c_.pretrain.eval_steps == 0 || step + 1 == c_.pretrain.steps) evaluate(row);
    history_.push_back(row);
  }

  void make_durable(const std::vector<uint8_t>& done) override {
    if (world_.rank() == 0) {
      TrainCheckpoint cp;
      cp.identity = plan_.identity;
      cp.steps_done = int64_t(history_.size());
      CTXSIM_CHECK(cp.steps_done == std::count(done.begin(), done.end(), uint8_t(1)), "pretrain: history and steps done disagree");
      const auto copy = [](const at::Tensor& t) {
        const float* p = t.data_ptr<float>();
        return std::vector<float>(p, p + t.numel());
      };
      cp.params = copy(model_.parameters());
      cp.adam_m = copy(adam_.m);
      cp.adam_v = copy(adam_.v);
      cp.history_json = history_json(history_);
      write_train_checkpoint(plan_.checkpoint_path, cp);
      write_curves(c_.output.dir, history_, data_, c_.pretrain.batch_size);
    }
    world_.barrier();
  }

 private:
  // Held-out loss and accuracy (collective): each rank its share of the fixed held-out samples.
  void evaluate(StepRow& row) {
    const int64_t E = data_.eval.size(), T = data_.eval.seq_len, R = world_.size(), r = world_.rank();
    const int64_t chunk = 16;
    double sums[3] = {0, 0, 0};  // loss, correct, predicted
    for (int64_t first = E * r / R, end = E * (r + 1) / R; first < end; first += chunk) {
      const int64_t n = std::min(chunk, end - first);
      const MlmBatch batch = make_mlm_batch(&data_.eval_input[size_t(first * T)], &data_.eval_labels[size_t(first * T)],
                                            &data_.eval.n_valid[size_t(first)], n, T, std::vector<uint64_t>(size_t(n), 0));
      const MlmResult res = model_.evaluate(batch);
      sums[0] += res.loss_sum;
      sums[1] += double(res.correct);
      sums[2] += double(res.predicted);
    }
    world_.sum_to_all(sums, 3);
    row.heldout_loss = sums[0] / std::max(1.0, sums[2]);
    row.heldout_accuracy = sums[1] / std::max(1.0, sums[2]);
    std::ostringstream line;
    line.precision(4);
    line << "step " << row.step << "/" << c_.pretrain.steps << ": training loss " << row.train_loss << ", held-out loss "
         << row.heldout_loss << ", accuracy " << 100 * row.heldout_accuracy << "% (unigram baseline: loss " << data_.unigram_loss
         << ", accuracy " << 100 * data_.unigram_accuracy << "%); learning rate " << row.learning_rate;
    log_info(line.str());
  }

  MpiComm& world_;
  const TrainPlan& plan_;
  const Config& c_;
  const TrainData& data_;
  MlmModel& model_;
  AdamWState& adam_;
  std::vector<StepRow>& history_;
  at::Tensor decay_;
  SampleOrder order_;
  int64_t global_predicted_ = 0;
  uint64_t batch_digest_ = 0;
  double local_loss_ = 0;
};

}  // namespace

namespace {

class PretrainJob : public Job {
 public:
  void check(const JobPlan& job, MpiComm& world) override { plan_ = train_plan(job, world.size()); }
  int execute(MpiComm& world, JobPlan& job, const StopSignals& stop, const Stopwatch& clock, std::ostream& out) override;

 private:
  TrainPlan plan_;
};

int PretrainJob::execute(MpiComm& world, JobPlan& job, const StopSignals& stop, const Stopwatch& clock, std::ostream& out) {
  TrainPlan& plan = plan_;
  const Config& c = plan.config;
  const std::string& config_path = job.config_path;
  const int threads = configure_threads(c.runtime.threads, world.local_size());
  if (const std::string note = thread_cap_note(c.runtime.threads, threads, "runtime.threads"); !note.empty()) log_info(note);
  log_info(version_string() + "; pretrain " + config_path + "; " + std::to_string(world.size()) + " rank(s) x " + std::to_string(threads) +
           " thread(s)" + busy_cores_note() + ", cpu; idle threads: " + openmp_wait_policy());
  const TrainData data = load_training_data(world, plan);

  // The model: BERT's initialisation (its step-0 weights exported), then the checkpoint's state.
  MlmModel model(data.model, at::kFloat);
  model.init(uint64_t(c.pretrain.seed));
  find_checkpoint(world, plan, model.parameters().numel());
  AdamWState adam = adamw_state(model.parameters());
  std::vector<StepRow> history;
  on_every_rank(world, [&] {
    if (world.rank() != 0) return;
    export_model(plan.init_out, model, data, c, c.where("pretrain.init_out"));
    record_export(plan, plan.init_out);
  });
  if (plan.steps_done > 0) {
    std::vector<float> params(size_t(model.parameters().numel())), m(params.size()), v(params.size());
    std::string history_text;
    if (world.rank() == 0) {
      params = std::move(plan.checkpoint->params);
      m = std::move(plan.checkpoint->adam_m);
      v = std::move(plan.checkpoint->adam_v);
      history_text = plan.checkpoint->history_json;
    }
    world.broadcast(params.data(), params.size() * sizeof(float), 0);
    world.broadcast(m.data(), m.size() * sizeof(float), 0);
    world.broadcast(v.data(), v.size() * sizeof(float), 0);
    const auto load = [](at::Tensor& t, const std::vector<float>& from) {
      std::memcpy(t.data_ptr<float>(), from.data(), from.size() * sizeof(float));
    };
    load(model.parameters(), params);
    load(adam.m, m);
    load(adam.v, v);
    adam.steps = plan.steps_done;
    history = parse_history(broadcast_string(world, history_text), plan.checkpoint_path);
    log_info("resuming " + plan.checkpoint_path + ": " + std::to_string(plan.steps_done) + " of " + std::to_string(c.pretrain.steps) +
             " steps done");
  }

  const int64_t B = c.pretrain.batch_size, steps = c.pretrain.steps;
  const std::vector<WorkUnit> units = make_units(steps * B, B);
  std::vector<uint8_t> done(units.size(), 0);
  for (int64_t s = 0; s < std::min(plan.steps_done, steps); ++s) done[size_t(s)] = 1;
  TrainingSteps work(world, plan, data, model, adam, history);
  Progress progress(steps * B, c.runtime.progress_seconds, world.rank() == 0);
  const Stopwatch training;
  const RoundTimes times = run_rounds(
      world, units, done, RoundOptions{c.pretrain.checkpoint_steps, c.runtime.flush_seconds, /*shared=*/true}, work, stop, progress);
  const double seconds = training.seconds();

  if (world.rank() != 0) return kExitOk;
  export_model(plan.model_out, model, data, c, c.where("pretrain.model_out"));
  record_export(plan, plan.model_out);
  const int64_t trained = steps - plan.steps_done;
  std::ostringstream summary;
  summary.precision(4);
  summary << "trained " << trained << " step(s) of " << B << " samples in " << seconds << " s ("
          << (seconds > 0 ? double(trained * B) / seconds : 0.0) << " samples/s); wrote " << plan.model_out << " and " << plan.init_out
          << " (step 0), loss curves in " << (fs::path(c.output.dir) / "loss.csv").string() << "; whole command " << clock.seconds()
          << " s";
  summary << "; of the training time on rank 0: forward and backward " << 100 * times.compute / std::max(seconds, 1e-9)
          << "%, gradient sum, update and evaluations " << 100 * times.write / std::max(seconds, 1e-9) << "%, checkpoints "
          << 100 * times.durable / std::max(seconds, 1e-9) << "%";
  log_info(summary.str());
  if (!history.empty() && !std::isnan(history.back().heldout_loss))
    out << "held-out " << (data.causal ? "next-token" : "masked-LM") << " loss " << history.back().heldout_loss << " (unigram baseline "
        << data.unigram_loss << "), accuracy " << 100 * history.back().heldout_accuracy << "% (unigram baseline "
        << 100 * data.unigram_accuracy << "%)\n";
  return kExitOk;
}

}  // namespace

int cmd_pretrain(const std::string& config_path, const std::vector<std::string>& overrides, std::ostream& out) {
  PretrainJob job;
  return run_in_shell(job_kind_named("pretrain"), config_path, overrides, job, out);
}

}  // namespace ctxsim
