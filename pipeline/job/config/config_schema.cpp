#include "pipeline/job/config/config_schema.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <sstream>

#include "stages/base/error.h"
#include "stages/base/files.h"

namespace ctxsim {

// ------------------------------------------------------------------ value parsing --------

std::string location(const std::string& file, const YAML::Mark& m) {
  if (m.is_null()) return file;
  return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

std::string shown(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  return "a mapping";
}

std::string range_text(int64_t lo, int64_t hi) { return "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]"; }

// A bound as people write it: 0.01, 1e+06, -inf, inf.
std::string number_text(double v) {
  if (v <= -std::numeric_limits<double>::max()) return "-inf";
  if (v >= std::numeric_limits<double>::max()) return "inf";
  std::ostringstream s;
  s << v;
  return s.str();
}

int64_t parse_int(const YAML::Node& n, const std::string& where, const std::string& key, int64_t lo, int64_t hi,
                  const std::string& example) {
  const std::string expect = "expected an integer " + range_text(lo, hi);
  if (!n.IsScalar()) throw Error(where + ": " + key, expect + ", got " + shown(n), "set " + key + " to a whole number such as " + example);
  const std::string& s = n.Scalar();
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE)
    throw Error(where + ": " + key, expect + ", got " + shown(n), "set " + key + " to a whole number such as " + example);
  if (v < lo || v > hi) throw Error(where + ": " + key, expect + ", got " + s, "use a value " + range_text(lo, hi));
  return v;
}

double parse_double(const YAML::Node& n, const std::string& where, const std::string& key, double lo, double hi, bool lo_open,
                    const std::string& example) {
  const bool unbounded = number_text(lo) == "-inf" && number_text(hi) == "inf";
  const std::string interval = std::string(lo_open ? "(" : "[") + number_text(lo) + ", " + number_text(hi) + "]";
  const std::string expect = unbounded ? "expected a number" : "expected a number in " + interval;
  if (!n.IsScalar()) throw Error(where + ": " + key, expect + ", got " + shown(n), "set " + key + " to a number such as " + example);
  const std::string& s = n.Scalar();
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v))
    throw Error(where + ": " + key, expect + ", got " + shown(n), "set " + key + " to a number such as " + example);
  if (v < lo || v > hi || (lo_open && v == lo)) throw Error(where + ": " + key, expect + ", got " + s, "use a value in " + interval);
  return v;
}

bool parse_bool(const YAML::Node& n, const std::string& where, const std::string& key) {
  bool v = false;
  if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v))
    throw Error(where + ": " + key, "expected true or false, got " + shown(n), "set " + key + " to true or false");
  return v;
}

std::string parse_string(const YAML::Node& n, const std::string& where, const std::string& key, const std::vector<std::string>& choices) {
  if (!n.IsScalar()) {
    const std::string expect = choices.empty() ? "expected a string" : "expected one of " + join(choices);
    throw Error(where + ": " + key, expect + ", got " + shown(n), "give " + key + " a single value");
  }
  const std::string& s = n.Scalar();
  if (!choices.empty() && std::find(choices.begin(), choices.end(), s) == choices.end()) {
    const std::string list = join(choices);
    const std::string guess = did_you_mean(s, choices);
    throw Error(where + ": " + key, "expected one of " + list + ", got '" + s + "'",
                guess.empty() ? "use one of " + list : "did you mean '" + guess + "'?");
  }
  return s;
}

// ------------------------------------------------------------------ choice keys ---------

template <>
const std::vector<std::pair<std::string, CorpusFormat>>& choices_of() {
  static const std::vector<std::pair<std::string, CorpusFormat>> c = {
      {"brown", CorpusFormat::Brown}, {"text", CorpusFormat::Text}, {"jsonl", CorpusFormat::Jsonl}};
  return c;
}
template <>
const std::vector<std::pair<std::string, InvalidUtf8>>& choices_of() {
  static const std::vector<std::pair<std::string, InvalidUtf8>> c = {{"error", InvalidUtf8::Error}, {"replace", InvalidUtf8::Replace}};
  return c;
}
template <>
const std::vector<std::pair<std::string, WindowMode>>& choices_of() {
  static const std::vector<std::pair<std::string, WindowMode>> c = {{"sentences", WindowMode::Sentences},
                                                                    {"documents", WindowMode::Documents}};
  return c;
}
template <>
const std::vector<std::pair<std::string, LowerCase>>& choices_of() {
  static const std::vector<std::pair<std::string, LowerCase>> c = {
      {"auto", LowerCase::Auto}, {"true", LowerCase::True}, {"false", LowerCase::False}};
  return c;
}
template <>
const std::vector<std::pair<std::string, DocumentSplit>>& choices_of() {
  static const std::vector<std::pair<std::string, DocumentSplit>> c = {
      {"all", DocumentSplit::All}, {"train", DocumentSplit::Train}, {"heldout", DocumentSplit::Heldout}};
  return c;
}
template <>
const std::vector<std::pair<std::string, SaveDtype>>& choices_of() {
  static const std::vector<std::pair<std::string, SaveDtype>> c = {{"float32", SaveDtype::Float32}, {"float16", SaveDtype::Float16}};
  return c;
}
template <>
const std::vector<std::pair<std::string, Precision>>& choices_of() {
  static const std::vector<std::pair<std::string, Precision>> c = {
      {"float32", Precision::Float32}, {"bfloat16", Precision::BFloat16}, {"float64", Precision::Float64}};
  return c;
}
template <>
const std::vector<std::pair<std::string, HeadVector>>& choices_of() {
  static const std::vector<std::pair<std::string, HeadVector>> c = {{"context", HeadVector::Context}, {"projected", HeadVector::Projected}};
  return c;
}
template <>
const std::vector<std::pair<std::string, Device>>& choices_of() {
  static const std::vector<std::pair<std::string, Device>> c = {{"auto", Device::Auto}, {"cpu", Device::Cpu}, {"cuda", Device::Cuda}};
  return c;
}

template <class E>
std::string name_of(E value) {
  for (const auto& [name, v] : choices_of<E>())
    if (v == value) return name;
  return "?";
}
template std::string name_of(CorpusFormat);
template std::string name_of(InvalidUtf8);
template std::string name_of(WindowMode);
template std::string name_of(LowerCase);
template std::string name_of(Precision);
template std::string name_of(HeadVector);
template std::string name_of(Device);
template std::string name_of(DocumentSplit);
template std::string name_of(SaveDtype);

// ------------------------------------------------------------------------ schema ---------

namespace {

template <class T>
using Ref = T& (*)(Config&);

template <class T>
const T& cref(Ref<T> ref, const Config& c) {
  return ref(const_cast<Config&>(c));
}

template <class T>
std::function<void(const Config&, Config&)> copier(Ref<T> ref) {
  return [=](const Config& from, Config& to) { ref(to) = cref(ref, from); };
}

Field int_field(std::string path, Ref<int64_t> ref, int64_t lo, int64_t hi, std::string help) {
  const std::string example = std::to_string(ref(*std::make_unique<Config>()));
  return {path, std::move(help),
          [=](Config& c, const YAML::Node& n, const std::string& w) { ref(c) = parse_int(n, w, path, lo, hi, example); },
          [=](const Config& c, YAML::Emitter& e) { e << cref(ref, c); }, copier(ref)};
}

Field double_field(std::string path, Ref<double> ref, double lo, double hi, bool lo_open, std::string help) {
  std::ostringstream ex;
  ex << ref(*std::make_unique<Config>());
  const std::string example = ex.str();
  return {path, std::move(help),
          [=](Config& c, const YAML::Node& n, const std::string& w) { ref(c) = parse_double(n, w, path, lo, hi, lo_open, example); },
          [=](const Config& c, YAML::Emitter& e) { e << cref(ref, c); }, copier(ref)};
}

Field bool_field(std::string path, Ref<bool> ref, std::string help) {
  return {path, std::move(help), [=](Config& c, const YAML::Node& n, const std::string& w) { ref(c) = parse_bool(n, w, path); },
          [=](const Config& c, YAML::Emitter& e) { e << cref(ref, c); }, copier(ref)};
}

Field string_field(std::string path, Ref<std::string> ref, std::vector<std::string> choices, std::string help) {
  return {path, std::move(help), [=](Config& c, const YAML::Node& n, const std::string& w) { ref(c) = parse_string(n, w, path, choices); },
          [=](const Config& c, YAML::Emitter& e) { e << YAML::DoubleQuoted << cref(ref, c); }, copier(ref)};
}

// A choice key, read and written by the names of choices_of<E>().
template <class E>
Field enum_field(std::string path, Ref<E> ref, std::string help) {
  std::vector<std::string> names;
  for (const auto& [name, value] : choices_of<E>()) names.push_back(name);
  return {path, std::move(help),
          [=](Config& c, const YAML::Node& n, const std::string& w) {
            const std::string s = parse_string(n, w, path, names);
            for (const auto& [name, value] : choices_of<E>())
              if (name == s) ref(c) = value;
          },
          [=](const Config& c, YAML::Emitter& e) { e << YAML::DoubleQuoted << name_of(cref(ref, c)); }, copier(ref)};
}

template <class T, class ParseItem>
Field list_field(std::string path, Ref<std::vector<T>> ref, std::string item_kind, ParseItem parse_item, std::string help) {
  return {path, std::move(help),
          [=](Config& c, const YAML::Node& n, const std::string& w) {
            if (!n.IsSequence())
              throw Error(w + ": " + path, "expected a list of " + item_kind + ", got " + shown(n),
                          "write it as [a, b, …] or as one '- item' per line");
            std::vector<T> out;
            for (size_t i = 0; i < n.size(); ++i)
              out.push_back(parse_item(n[i], location(w.substr(0, w.find(':')), n[i].Mark()), path + "[" + std::to_string(i) + "]"));
            ref(c) = std::move(out);
          },
          [=](const Config& c, YAML::Emitter& e) {
            e << YAML::Flow << YAML::BeginSeq;
            for (const auto& v : cref(ref, c)) e << v;
            e << YAML::EndSeq;
          },
          copier(ref)};
}

}  // namespace

// The table of every config key, one row each (key, default, range, help): long as a table is.
const std::vector<Field>& schema() {
  static const std::vector<Field> fields = [] {
    std::vector<Field> f;
    f.push_back(enum_field<CorpusFormat>(
                    "corpus.format", [](Config& c) -> CorpusFormat& { return c.corpus.format; },
                    "brown (one sentence per line, word/tag) | text | jsonl")
                    .also_pretrain()
                    .also_segment());
    f.push_back(string_field(
                    "corpus.path", [](Config& c) -> std::string& { return c.corpus.path; }, {},
                    "corpus folder or file, relative to the working directory")
                    .also_pretrain()
                    .also_segment());
    f.push_back(string_field(
                    "corpus.text_field", [](Config& c) -> std::string& { return c.corpus.text_field; }, {},
                    "jsonl: the member holding each document's text")
                    .also_pretrain()
                    .also_segment());
    f.push_back(enum_field<InvalidUtf8>(
                    "corpus.invalid_utf8", [](Config& c) -> InvalidUtf8& { return c.corpus.invalid_utf8; },
                    "error | replace (invalid bytes become U+FFFD)")
                    .also_pretrain()
                    .also_segment());
    f.push_back(int_field(
                    "corpus.max_documents", [](Config& c) -> int64_t& { return c.corpus.max_documents; }, 0, kMaxCount,
                    "0 = all documents, else the first N in corpus order")
                    .also_pretrain()
                    .also_segment());
    f.push_back(int_field(
                    "corpus.heldout_every", [](Config& c) -> int64_t& { return c.corpus.heldout_every; }, 0, kMaxCount,
                    "N > 0: documents N-1, 2N-1, ... are held out (pretrain never trains on them); 0 = none")
                    .also_pretrain()
                    .also_segment());
    f.push_back(enum_field<DocumentSplit>(
                    "corpus.split", [](Config& c) -> DocumentSplit& { return c.corpus.split; },
                    "run: samples from all documents | the train split | the heldout split")
                    .also_segment());
    f.push_back(int_field(
                    "samples.seq_len", [](Config& c) -> int64_t& { return c.samples.seq_len; }, 3, 8192,
                    "T: tokens per sample including [CLS] and [SEP]")
                    .also_pretrain()
                    .also_segment());
    f.push_back(enum_field<WindowMode>(
                    "samples.windows", [](Config& c) -> WindowMode& { return c.samples.windows; },
                    "sentences: a window at every stride-th sentence start | documents: one per document")
                    .also_pretrain());
    f.push_back(int_field(
                    "samples.stride_sentences", [](Config& c) -> int64_t& { return c.samples.stride_sentences; }, 1, kMaxCount,
                    "sentences mode: a window starts every N sentences")
                    .also_pretrain());
    f.push_back(int_field(
        "samples.num_samples", [](Config& c) -> int64_t& { return c.samples.num_samples; }, 1, kMaxCount,
        "windows drawn with the seeded shuffle (all when fewer exist)"));
    f.push_back(int_field(
        "samples.seed", [](Config& c) -> int64_t& { return c.samples.seed; }, 0, std::numeric_limits<int64_t>::max(),
        "SplitMix64 seed of the draw"));
    f.push_back(string_field(
                    "model.path", [](Config& c) -> std::string& { return c.model.path; }, {},
                    "Hugging Face BERT folder: config.json, model.safetensors, vocab.txt")
                    .also_segment());
    f.push_back(string_field(
                    "model.name", [](Config& c) -> std::string& { return c.model.name; }, {},
                    "or a model name found offline in the Hugging Face cache (e.g. bert-base-uncased)")
                    .also_segment());
    f.push_back(string_field(
                    "model.vocab", [](Config& c) -> std::string& { return c.model.vocab; }, {},
                    "vocab.txt; empty = the model folder's vocab.txt (pretrain: the vocabulary it trains with)")
                    .also_pretrain()
                    .also_segment());
    f.push_back(enum_field<LowerCase>(
                    "model.do_lower_case", [](Config& c) -> LowerCase& { return c.model.do_lower_case; },
                    "auto = tokenizer_config.json, else true (uncased)")
                    .also_pretrain()
                    .also_segment());
    f.push_back(
        enum_field<Precision>(
            "model.dtype", [](Config& c) -> Precision& { return c.model.dtype; }, "compute dtype; float64 for count-for-count checks")
            .also_segment());
    f.push_back(enum_field<HeadVector>(
        "model.vector", [](Config& c) -> HeadVector& { return c.model.vector; },
        "head output: context (sum_j A_ij v_j) | projected (o_i W_O[h])"));
    f.push_back(bool_field(
        "model.tf32", [](Config& c) -> bool& { return c.model.tf32; },
        "GPU ranks: float32 matmuls in TF32 (10-bit mantissa, faster, moves near-tied pairs); false = full float32"));
    f.push_back(double_field(
        "statistics.attention_threshold", [](Config& c) -> double& { return c.statistics.attention_threshold; }, 0.0, 1.0, false,
        "beta: a pair is high-attention when max(A_ij, A_ji) >= beta"));
    f.push_back(list_field<std::string>(
        "statistics.separators", [](Config& c) -> std::vector<std::string>& { return c.statistics.separators; }, "tokens",
        [](const YAML::Node& n, const std::string& w, const std::string& k) {
          const std::string s = parse_string(n, w, k, {});
          if (s.empty()) throw Error(w + ": " + k, "a separator token cannot be empty", "remove it");
          return s;
        },
        "tokens whose attention mass is measured (vocabulary spellings)"));
    f.push_back(list_field<int64_t>(
        "statistics.examples", [](Config& c) -> std::vector<int64_t>& { return c.statistics.examples; }, "sample ids",
        [](const YAML::Node& n, const std::string& w, const std::string& k) { return parse_int(n, w, k, 0, kMaxCount, "0"); },
        "sample ids whose full attention and similarity matrices are stored"));
    f.push_back(int_field(
        "statistics.top_anchors", [](Config& c) -> int64_t& { return c.statistics.top_anchors; }, 1, 1000,
        "anchors listed per head in summaries and reports"));
    // pretrain: read by `ctxsim pretrain` only.
    const auto pretrain = [&](Field field) { f.push_back(field.only_pretrain()); };
    pretrain(int_field(
        "pretrain.layers", [](Config& c) -> int64_t& { return c.pretrain.layers; }, 1, 64, "encoder layers"));
    pretrain(int_field(
        "pretrain.hidden", [](Config& c) -> int64_t& { return c.pretrain.hidden; }, 8, 4096, "hidden size"));
    pretrain(int_field(
        "pretrain.heads", [](Config& c) -> int64_t& { return c.pretrain.heads; }, 1, 256, "attention heads (they divide the hidden size)"));
    pretrain(int_field(
        "pretrain.intermediate", [](Config& c) -> int64_t& { return c.pretrain.intermediate; }, 8, 65536, "feed-forward size"));
    pretrain(int_field(
        "pretrain.steps", [](Config& c) -> int64_t& { return c.pretrain.steps; }, 1, 100'000'000, "optimizer steps"));
    pretrain(int_field(
        "pretrain.batch_size", [](Config& c) -> int64_t& { return c.pretrain.batch_size; }, 1, 65536,
        "samples per step over all ranks together (the rank count does not change it)"));
    pretrain(double_field(
        "pretrain.learning_rate", [](Config& c) -> double& { return c.pretrain.learning_rate; }, 0.0, 1.0, true,
        "AdamW peak learning rate, reached after the warmup"));
    pretrain(int_field(
        "pretrain.warmup_steps", [](Config& c) -> int64_t& { return c.pretrain.warmup_steps; }, 0, 100'000'000,
        "linear warmup from 0, then linear decay to 0 at the last step"));
    pretrain(double_field(
        "pretrain.weight_decay", [](Config& c) -> double& { return c.pretrain.weight_decay; }, 0.0, 1.0, false,
        "AdamW decoupled weight decay (not on biases and LayerNorm)"));
    pretrain(double_field(
        "pretrain.clip_norm", [](Config& c) -> double& { return c.pretrain.clip_norm; }, 0.0, 1e6, false,
        "clip the global gradient norm to this; 0 = no clipping"));
    pretrain(double_field(
        "pretrain.dropout", [](Config& c) -> double& { return c.pretrain.dropout; }, 0.0, 0.9, false,
        "dropout of hidden states and attention probabilities (BERT: 0.1)"));
    pretrain(double_field(
        "pretrain.mask_fraction", [](Config& c) -> double& { return c.pretrain.mask_fraction; }, 0.0, 1.0, true,
        "share of a sample's non-special tokens predicted: 80% [MASK], 10% random, 10% unchanged"));
    pretrain(int_field(
        "pretrain.seed", [](Config& c) -> int64_t& { return c.pretrain.seed; }, 0, std::numeric_limits<int64_t>::max(),
        "seeds the initial weights, the sample order, the masks and dropout"));
    pretrain(int_field(
        "pretrain.checkpoint_steps", [](Config& c) -> int64_t& { return c.pretrain.checkpoint_steps; }, 1, 100'000'000,
        "a durable checkpoint every N steps (or runtime.flush_seconds), and on SIGTERM/SIGINT"));
    pretrain(int_field(
        "pretrain.eval_steps", [](Config& c) -> int64_t& { return c.pretrain.eval_steps; }, 1, 100'000'000,
        "held-out loss and accuracy every N steps"));
    pretrain(int_field(
        "pretrain.eval_samples", [](Config& c) -> int64_t& { return c.pretrain.eval_samples; }, 1, 1'000'000,
        "held-out samples evaluated, each with fixed masks"));
    pretrain(enum_field<SaveDtype>(
        "pretrain.save_dtype", [](Config& c) -> SaveDtype& { return c.pretrain.save_dtype; },
        "dtype of the exported Hugging Face weights: float32 | float16"));
    pretrain(string_field(
                 "pretrain.model_out", [](Config& c) -> std::string& { return c.pretrain.model_out; }, {},
                 "folder of the trained model (Hugging Face layout); empty = <output.dir>/model")
                 .steering());
    pretrain(string_field(
                 "pretrain.init_out", [](Config& c) -> std::string& { return c.pretrain.init_out; }, {},
                 "folder of the step-0 weights (Hugging Face layout); empty = <output.dir>/init")
                 .steering());
    // segment: read by `ctxsim segment` only.
    const auto segment = [&](Field field) { f.push_back(field.only_segment()); };
    segment(int_field(
        "segment.documents", [](Config& c) -> int64_t& { return c.segment.documents; }, 0, 100000,
        "test documents per subset; 0 = Choi's counts (400 of 3-11, 100 each of 3-5, 6-8, 9-11)"));
    segment(int_field(
        "segment.dev_documents", [](Config& c) -> int64_t& { return c.segment.dev_documents; }, 1, 100000,
        "documents of 3-11 (another seed) on which the summary chooses each model method's best layer"));
    segment(int_field(
        "segment.seed", [](Config& c) -> int64_t& { return c.segment.seed; }, 0, std::numeric_limits<int64_t>::max(),
        "seeds the draw of the test documents"));
    segment(int_field(
        "segment.block_window", [](Config& c) -> int64_t& { return c.segment.block_window; }, 1, 1000,
        "sentences per block on each side of a gap (TextTiling and the depth-score methods)"));
    segment(int_field(
        "segment.smoothing", [](Config& c) -> int64_t& { return c.segment.smoothing; }, 0, 1000,
        "gap scores averaged over +-N neighbouring gaps before the depth scores; 0 = none"));
    segment(int_field(
        "segment.c99_mask", [](Config& c) -> int64_t& { return c.segment.c99_mask; }, 1, 101, "side of C99's rank mask, odd (Choi: 11)"));
    segment(int_field(
        "segment.attention_layers", [](Config& c) -> int64_t& { return c.segment.attention_layers; }, 1, 1000,
        "the final layers whose attention across gaps the attention-final method averages"));
    segment(string_field(
        "segment.method", [](Config& c) -> std::string& { return c.segment.method; }, {"heads-c99", "heads-depth", "attention"},
        "what `segment --text` uses: heads-c99 | heads-depth | attention (of segment.layer)"));
    segment(int_field(
        "segment.layer", [](Config& c) -> int64_t& { return c.segment.layer; }, -1, 1000,
        "the layer `segment --text` uses; -1 = the model's last"));
    f.push_back(string_field(
                    "output.dir", [](Config& c) -> std::string& { return c.output.dir; }, {},
                    "folder of store.h5 and the report (pretrain: checkpoints, loss curves) - where, not what")
                    .steering()
                    .also_pretrain()
                    .also_segment());
    f.push_back(bool_field(
                    "output.overwrite", [](Config& c) -> bool& { return c.output.overwrite; },
                    "replace an existing store (or checkpoint) made with a different config")
                    .steering()
                    .also_pretrain()
                    .also_segment());
    f.push_back(bool_field(
                    "output.report", [](Config& c) -> bool& { return c.output.report; }, "write the report when the run ends")
                    .steering()
                    .also_segment());
    f.push_back(int_field(
                    "output.report_max_bytes", [](Config& c) -> int64_t& { return c.output.report_max_bytes; }, 1 << 20, int64_t(1) << 40,
                    "size budget of report.html; large examples are block-pooled to fit")
                    .steering());
    f.push_back(int_field(
                    "runtime.threads", [](Config& c) -> int64_t& { return c.runtime.threads; }, 0, 4096,
                    "threads per rank; 0 = OMP_NUM_THREADS, SLURM_CPUS_PER_TASK, else all cores")
                    .steering()
                    .also_pretrain()
                    .also_segment());
    f.push_back(int_field(
                    "runtime.batch_size", [](Config& c) -> int64_t& { return c.runtime.batch_size; }, 1, 65536, "samples per forward pass")
                    .also_segment());
    f.push_back(int_field(
                    "runtime.unit_size", [](Config& c) -> int64_t& { return c.runtime.unit_size; }, 1, kMaxCount,
                    "samples per work unit (the resume granularity; independent of the rank count)")
                    .also_segment());
    f.push_back(enum_field<Device>(
                    "runtime.device", [](Config& c) -> Device& { return c.runtime.device; },
                    "auto = the local GPU when built with CUDA and one is visible, else CPU")
                    .steering());
    f.push_back(double_field(
                    "runtime.progress_seconds", [](Config& c) -> double& { return c.runtime.progress_seconds; }, 0.0, 1e6, true,
                    "seconds between progress lines when not on a terminal")
                    .steering()
                    .also_pretrain()
                    .also_segment());
    f.push_back(int_field(
                    "runtime.flush_units", [](Config& c) -> int64_t& { return c.runtime.flush_units; }, 1, kMaxCount,
                    "make progress durable (resume state) every N completed work units")
                    .steering()
                    .also_segment());
    f.push_back(double_field(
                    "runtime.flush_seconds", [](Config& c) -> double& { return c.runtime.flush_seconds; }, 0.0, 1e7, true,
                    "… or every N seconds, whichever comes first")
                    .steering()
                    .also_pretrain()
                    .also_segment());
    return f;
  }();
  return fields;
}

const std::vector<std::string>& sections() {
  static const std::vector<std::string> s = {"corpus",   "samples", "model",  "selection", "statistics",
                                             "pretrain", "segment", "output", "runtime",   "sweep"};
  return s;
}

const std::vector<std::string> kRuleKeys = {"top_fraction", "relative_to_max", "absolute"};

const Field* find_field(const std::string& path) {
  for (const auto& f : schema())
    if (f.path == path) return &f;
  return nullptr;
}

std::vector<std::string> keys_of(const std::string& section) {
  std::vector<std::string> out;
  for (const auto& f : schema())
    if (f.path.compare(0, section.size() + 1, section + ".") == 0) out.push_back(f.path.substr(section.size() + 1));
  return out;
}

}  // namespace ctxsim
