#include "pipeline/job/config/config_schema.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>

#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/limits.h"
#include "stages/base/suggest.h"
#include "stages/model/family.h"
#include "stages/prune/prune.h"

namespace ctxsim {

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

// The jobs, a row each: its name and the section that makes a config file its own. Their keys'
// bits below are their row numbers.
enum : int { kRun, kSegment, kPrune, kPretrain };
constexpr uint32_t kSteers = 1u << 31;  // a key's jobs: not part of their results' identity

}  // namespace

const std::vector<JobKindRow>& job_kinds() {
  static const std::vector<JobKindRow> rows = {{"run", ""}, {"segment", "segment"}, {"prune", "prune"}, {"pretrain", "pretrain"}};
  return rows;
}

namespace {

// A row: its jobs (R | S | X | P: run, segment, prune, pretrain; and Steer), path, help, and how it is read, written and copied.
Field row(uint32_t jobs, std::string path, std::string help,
          std::function<void(Config&, const YAML::Node&, const std::string& file, const std::string& where)> set,
          std::function<void(const Config&, YAML::Emitter&)> emit, std::function<void(const Config&, Config&)> copy) {
  Field f;
  f.path = std::move(path);
  f.help = std::move(help);
  f.set = std::move(set);
  f.emit = std::move(emit);
  f.copy = std::move(copy);
  f.used_by = jobs & ~kSteers;
  f.determines_results = !(jobs & kSteers);
  return f;
}

Field int_field(uint32_t jobs, std::string path, Ref<int64_t> ref, int64_t lo, int64_t hi, std::string help) {
  const std::string example = std::to_string(ref(*std::make_unique<Config>()));
  return row(
      jobs, path, std::move(help),
      [=](Config& c, const YAML::Node& n, const std::string&, const std::string& w) { ref(c) = parse_int(n, w, path, lo, hi, example); },
      [=](const Config& c, YAML::Emitter& e) { e << cref(ref, c); }, copier(ref));
}

Field double_field(uint32_t jobs, std::string path, Ref<double> ref, double lo, double hi, bool lo_open, std::string help) {
  std::ostringstream ex;
  ex << ref(*std::make_unique<Config>());
  const std::string example = ex.str();
  return row(
      jobs, path, std::move(help),
      [=](Config& c, const YAML::Node& n, const std::string&, const std::string& w) {
        ref(c) = parse_double(n, w, path, lo, hi, lo_open, example);
      },
      [=](const Config& c, YAML::Emitter& e) { e << cref(ref, c); }, copier(ref));
}

Field bool_field(uint32_t jobs, std::string path, Ref<bool> ref, std::string help) {
  return row(
      jobs, path, std::move(help),
      [=](Config& c, const YAML::Node& n, const std::string&, const std::string& w) { ref(c) = parse_bool(n, w, path); },
      [=](const Config& c, YAML::Emitter& e) { e << cref(ref, c); }, copier(ref));
}

Field string_field(uint32_t jobs, std::string path, Ref<std::string> ref, std::vector<std::string> choices, std::string help) {
  return row(
      jobs, path, std::move(help),
      [=](Config& c, const YAML::Node& n, const std::string&, const std::string& w) { ref(c) = parse_string(n, w, path, choices); },
      [=](const Config& c, YAML::Emitter& e) { e << YAML::DoubleQuoted << cref(ref, c); }, copier(ref));
}

// One choice or a list of distinct ones (prune.score: noise, or [noise, effective_rank]); one is
// written as it was before lists were allowed (a config's identity does not change).
Field choices_field(uint32_t jobs, std::string path, Ref<std::vector<std::string>> ref, std::vector<std::string> choices,
                    std::string help) {
  return row(
      jobs, path, std::move(help),
      [=](Config& c, const YAML::Node& n, const std::string& file, const std::string& w) {
        std::vector<std::string> out;
        if (!n.IsSequence()) out.push_back(parse_string(n, w, path, choices));
        for (size_t i = 0; n.IsSequence() && i < n.size(); ++i) {
          const std::string where = path + "[" + std::to_string(i) + "]";
          out.push_back(parse_string(n[i], location(file, n[i].Mark()), where, choices));
          if (std::find(out.begin(), out.end() - 1, out.back()) != out.end() - 1)
            throw Error(location(file, n[i].Mark()) + ": " + where, "'" + out.back() + "' is in the list twice", "name each once");
        }
        if (out.empty()) throw Error(w + ": " + path, "is an empty list", "name at least one of " + join(choices, ", "));
        ref(c) = std::move(out);
      },
      [=](const Config& c, YAML::Emitter& e) {
        const auto& v = cref(ref, c);
        if (v.size() == 1) {
          e << YAML::DoubleQuoted << v.front();
          return;
        }
        e << YAML::Flow << YAML::BeginSeq;
        for (const auto& x : v) e << YAML::DoubleQuoted << x;
        e << YAML::EndSeq;
      },
      copier(ref));
}

// A choice key, read and written by the names of choices_of<E>().
template <class E>
Field enum_field(uint32_t jobs, std::string path, Ref<E> ref, std::string help) {
  std::vector<std::string> names;
  for (const auto& [name, value] : choices_of<E>()) names.push_back(name);
  return row(
      jobs, path, std::move(help),
      [=](Config& c, const YAML::Node& n, const std::string&, const std::string& w) {
        const std::string s = parse_string(n, w, path, names);
        for (const auto& [name, value] : choices_of<E>())
          if (name == s) ref(c) = value;
      },
      [=](const Config& c, YAML::Emitter& e) { e << YAML::DoubleQuoted << name_of(cref(ref, c)); }, copier(ref));
}

template <class T, class ParseItem>
Field list_field(uint32_t jobs, std::string path, Ref<std::vector<T>> ref, std::string item_kind, ParseItem parse_item, std::string help) {
  return row(
      jobs, path, std::move(help),
      [=](Config& c, const YAML::Node& n, const std::string& file, const std::string& w) {
        if (!n.IsSequence())
          throw Error(w + ": " + path, "expected a list of " + item_kind + ", got " + shown(n),
                      "write it as [a, b, …] or as one '- item' per line");
        std::vector<T> out;
        for (size_t i = 0; i < n.size(); ++i)
          out.push_back(parse_item(n[i], location(file, n[i].Mark()), path + "[" + std::to_string(i) + "]"));
        ref(c) = std::move(out);
      },
      [=](const Config& c, YAML::Emitter& e) {
        e << YAML::Flow << YAML::BeginSeq;
        for (const auto& v : cref(ref, c)) e << v;
        e << YAML::EndSeq;
      },
      copier(ref));
}

std::string parse_separator(const YAML::Node& n, const std::string& w, const std::string& k) {
  const std::string s = parse_string(n, w, k, {});
  if (s.empty()) throw Error(w + ": " + k, "a separator token cannot be empty", "remove it");
  return s;
}

int64_t parse_sample_id(const YAML::Node& n, const std::string& w, const std::string& k) { return parse_int(n, w, k, 0, kMaxCount, "0"); }

// ---------------------------------------------------------------- the selection key -------
// selection: one rule ({top_fraction: 0.01}) or a list of them, each with its own optional
// attention_threshold and separators; selection.<rule>=value on the command line is one rule.
const std::vector<std::string> kRuleKeys = {"top_fraction", "relative_to_max", "absolute"};

SelectionRule parse_rule(const std::string& key, const YAML::Node& value, const std::string& where, const std::string& path) {
  SelectionRule r;
  if (key == "top_fraction") {
    r.kind = SelectionRule::Kind::TopFraction;
    r.value = parse_double(value, where, path, 0.0, 1.0, true, "0.01");
  } else if (key == "relative_to_max") {
    r.kind = SelectionRule::Kind::RelativeToMax;
    r.value = parse_double(value, where, path, 0.0, 1.0, true, "0.9");
  } else if (key == "absolute") {
    r.kind = SelectionRule::Kind::Absolute;
    r.value = parse_double(value, where, path, -std::numeric_limits<double>::max(), std::numeric_limits<double>::infinity(), false, "5.0");
  } else {
    const std::string guess = did_you_mean(key, kRuleKeys);
    throw Error(where + ": selection." + key, "unknown key",
                guess.empty() ? "the keys of selection are: " + join(kRuleKeys) : "did you mean 'selection." + guess + "'?");
  }
  return r;
}

std::vector<SelectionRule> parse_selection(const YAML::Node& n, const std::string& file, const std::string& where) {
  std::vector<YAML::Node> items;
  if (n.IsMap()) {
    items.push_back(n);
  } else if (n.IsSequence() && n.size() > 0) {
    for (const auto& item : n) items.push_back(item);
  } else {
    throw Error(where + ": selection", "expected a rule such as {top_fraction: 0.01} or a list of rules, got " + shown(n),
                "write e.g. 'selection: [{top_fraction: 0.01}, {relative_to_max: 0.9}]'");
  }
  std::vector<SelectionRule> rules;
  for (size_t i = 0; i < items.size(); ++i) {
    const auto& item = items[i];
    const std::string iw = location(file, item.Mark());
    const std::string path = n.IsMap() ? "selection" : "selection[" + std::to_string(i) + "]";
    if (!item.IsMap() || item.size() == 0)
      throw Error(iw + ": " + path, "each rule is one key: value pair (top_fraction, relative_to_max or absolute), got " + shown(item),
                  "write one rule per list item, e.g. '- top_fraction: 0.01'");
    // One selection key, optionally with the rule's own attention_threshold and separators.
    std::optional<SelectionRule> rule;
    double beta = std::nan("");
    std::vector<std::string> seps;
    for (const auto& kv : item) {
      const std::string key = kv.first.Scalar();
      const std::string vw = location(file, kv.second.Mark());
      if (key == "attention_threshold") {
        beta = parse_double(kv.second, vw, path + ".attention_threshold", 0.0, 1.0, false, "0.1");
      } else if (key == "separators") {
        if (!kv.second.IsSequence() || kv.second.size() == 0)
          throw Error(vw + ": " + path + ".separators", "expected a list of tokens, got " + shown(kv.second), "write e.g. [\".\", \",\"]");
        for (size_t i = 0; i < kv.second.size(); ++i) seps.push_back(parse_string(kv.second[i], vw, path + ".separators", {}));
      } else {
        if (rule)
          throw Error(iw + ": " + path, "a rule has one selection key, got '" + rule->key() + "' and '" + key + "'",
                      "write one rule per list item");
        rule = parse_rule(key, kv.second, vw, path + "." + key);
      }
    }
    if (!rule) throw Error(iw + ": " + path, "no selection key (top_fraction, relative_to_max or absolute)", "add one");
    rule->attention_threshold = beta;
    rule->separators = seps;
    rules.push_back(*rule);
  }
  return rules;
}

void emit_selection(const std::vector<SelectionRule>& rules, YAML::Emitter& e) {
  e << YAML::BeginSeq;
  for (const auto& r : rules) {
    e << YAML::Flow << YAML::BeginMap << YAML::Key << r.key() << YAML::Value << r.value;
    if (!std::isnan(r.attention_threshold)) e << YAML::Key << "attention_threshold" << YAML::Value << r.attention_threshold;
    if (!r.separators.empty()) {
      e << YAML::Key << "separators" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const auto& sep : r.separators) e << YAML::DoubleQuoted << sep;
      e << YAML::EndSeq;
    }
    e << YAML::EndMap;
  }
  e << YAML::EndSeq;
}

Field selection_field(uint32_t jobs, std::string path, Ref<std::vector<SelectionRule>> ref, std::string help) {
  Field f = row(
      jobs, std::move(path), std::move(help),
      [=](Config& c, const YAML::Node& n, const std::string& file, const std::string& w) { ref(c) = parse_selection(n, file, w); },
      [=](const Config& c, YAML::Emitter& e) { emit_selection(cref(ref, c), e); }, copier(ref));
  f.subkeys = kRuleKeys;
  f.set_sub = [=](Config& c, const std::string& rule, const YAML::Node& n, const std::string& w) {
    ref(c) = {parse_rule(rule, n, w, "selection." + rule)};
  };
  return f;
}

// The families with a language-model head: what pretraining can train.
std::vector<std::string> lm_families() {
  std::vector<std::string> names;
  for (const FamilySpec* f : all_families())
    if (f->lm_head.objective != LmObjective::None) names.emplace_back(f->model_type);
  return names;
}

// prune.score's choices and its help: the rows of the score table (stages/prune/prune.cpp).
std::vector<std::string> score_names() {
  std::vector<std::string> names;
  for (const prune::ScoreRow& r : prune::scores()) names.emplace_back(r.name);
  return names;
}

std::string score_help() {
  std::string help = "the scores of prune.scores_from, an order each (one or a list):", sep = " ";
  for (const prune::ScoreRow& r : prune::scores()) {
    help += sep + r.name + (r.ascending ? " (lowest first)" : " (highest first)");
    sep = " | ";
  }
  return help;
}
}  // namespace

// The jobs that read a key (R run, S segment, X prune, P pretrain: their rows' bits), and Steer
// for a key that steers how a job goes but not its results (no part of a store's identity).
constexpr uint32_t R = 1u << kRun, S = 1u << kSegment, X = 1u << kPrune, P = 1u << kPretrain, Steer = kSteers;
#define KEY(member) \
  [](Config & c) -> auto& { return c.member; }

// The table of every config key, one line each: jobs, key, member, range or choices, meaning.
// The defaults are Config's member initialisers; the ranges of quantities the stages bound are
// their named limits (stages/base/limits.h).
const std::vector<Field>& schema() {
  static const std::vector<Field> fields = {
      // clang-format off
      enum_field<CorpusFormat>(R|P|S|X, "corpus.format", KEY(corpus.format), "brown (one sentence per line, word/tag) | text | jsonl"),
      string_field(R|P|S|X, "corpus.path", KEY(corpus.path), {}, "corpus folder or file, relative to the working directory"),
      string_field(R|P|S|X, "corpus.text_field", KEY(corpus.text_field), {}, "jsonl: the member holding each document's text"),
      enum_field<InvalidUtf8>(R|P|S|X, "corpus.invalid_utf8", KEY(corpus.invalid_utf8), "error | replace (invalid bytes become U+FFFD)"),
      int_field(R|P|S|X, "corpus.max_documents", KEY(corpus.max_documents), 0, kMaxCount, "0 = all documents, else the first N in corpus order"),
      int_field(R|P|S|X, "corpus.heldout_every", KEY(corpus.heldout_every), 0, kMaxCount, "N > 0: documents N-1, 2N-1, ... are held out (pretrain never trains on them); 0 = none"),
      enum_field<DocumentSplit>(R|S|X, "corpus.split", KEY(corpus.split), "run: samples from all documents | the train split | the heldout split"),
      int_field(R|P|S|X, "samples.seq_len", KEY(samples.seq_len), kSeqLen.lo, kSeqLen.hi, "T: tokens per sample, the family's frame included ([CLS] … [SEP], <s> … </s>, <|endoftext|> …)"),
      enum_field<WindowMode>(R|P|X, "samples.windows", KEY(samples.windows), "sentences: a window at every stride-th sentence start | documents: one per document"),
      int_field(R|P|X, "samples.stride_sentences", KEY(samples.stride_sentences), 1, kMaxCount, "sentences mode: a window starts every N sentences"),
      int_field(R|X, "samples.num_samples", KEY(samples.num_samples), 1, kMaxCount, "windows drawn with the seeded shuffle (all when fewer exist)"),
      int_field(R|X, "samples.seed", KEY(samples.seed), 0, kMaxSeed, "SplitMix64 seed of the draw"),
      string_field(R|S|X, "model.path", KEY(model.path), {}, "Hugging Face model folder of any family (config.json, model.safetensors, its tokenizer files)"),
      string_field(R|S|X, "model.name", KEY(model.name), {}, "or a model name found offline in the Hugging Face cache (e.g. bert-base-uncased)"),
      string_field(R|P|S|X, "model.vocab", KEY(model.vocab), {}, "the tokenizer (vocab.txt, tokenizer.json, or a vocab.json + merges.txt folder); empty = the model folder's (pretrain: the vocabulary it trains with)"),
      enum_field<LowerCase>(R|P|S|X, "model.do_lower_case", KEY(model.do_lower_case), "auto = tokenizer_config.json, else true (uncased)"),
      enum_field<Precision>(R|S|X, "model.dtype", KEY(model.dtype), "compute dtype; float64 for count-for-count checks"),
      enum_field<HeadVector>(R, "model.vector", KEY(model.vector), "head output: context (sum_j A_ij v_j) | projected (o_i W_O[h])"),
      bool_field(R, "model.tf32", KEY(model.tf32), "GPU ranks: float32 matmuls in TF32 (10-bit mantissa, faster, moves near-tied pairs); false = full float32"),
      selection_field(R, "selection", KEY(selection), "SPEC §3 rules, all evaluated on one forward pass"),
      double_field(R, "statistics.attention_threshold", KEY(statistics.attention_threshold), 0.0, 1.0, false, "beta: a pair is high-attention when max(A_ij, A_ji) >= beta"),
      list_field<std::string>(R, "statistics.separators", KEY(statistics.separators), "tokens", parse_separator, "tokens whose attention mass is measured (vocabulary spellings)"),
      list_field<int64_t>(R, "statistics.examples", KEY(statistics.examples), "sample ids", parse_sample_id, "sample ids whose full attention and similarity matrices are stored"),
      int_field(R, "statistics.top_anchors", KEY(statistics.top_anchors), 1, 1000, "anchors listed per head in summaries and reports"),
      string_field(P, "pretrain.family", KEY(pretrain.family), lm_families(), "the model family trained, its layout and its head's objective: masked-LM (bert, distilbert, roberta) or next-token (gpt2 and the Llama lineage); model.vocab is its tokenizer"),
      int_field(P, "pretrain.layers", KEY(pretrain.layers), 1, 64, "encoder layers"),
      int_field(P, "pretrain.hidden", KEY(pretrain.hidden), 8, 4096, "hidden size"),
      int_field(P, "pretrain.heads", KEY(pretrain.heads), 1, 256, "attention heads (they divide the hidden size)"),
      int_field(P, "pretrain.intermediate", KEY(pretrain.intermediate), 8, 65536, "feed-forward size"),
      int_field(P, "pretrain.steps", KEY(pretrain.steps), 1, kMaxSteps, "optimizer steps"),
      int_field(P, "pretrain.batch_size", KEY(pretrain.batch_size), 1, 65536, "samples per step over all ranks together (the rank count does not change it)"),
      double_field(P, "pretrain.learning_rate", KEY(pretrain.learning_rate), 0.0, 1.0, true, "AdamW peak learning rate, reached after the warmup"),
      int_field(P, "pretrain.warmup_steps", KEY(pretrain.warmup_steps), 0, kMaxSteps, "linear warmup from 0, then linear decay to 0 at the last step"),
      double_field(P, "pretrain.weight_decay", KEY(pretrain.weight_decay), 0.0, 1.0, false, "AdamW decoupled weight decay (not on biases and LayerNorm)"),
      double_field(P, "pretrain.clip_norm", KEY(pretrain.clip_norm), 0.0, 1e6, false, "clip the global gradient norm to this; 0 = no clipping"),
      double_field(P, "pretrain.dropout", KEY(pretrain.dropout), 0.0, 0.9, false, "dropout of hidden states and attention probabilities (BERT: 0.1)"),
      double_field(P, "pretrain.mask_fraction", KEY(pretrain.mask_fraction), 0.0, 1.0, true, "masked-LM: share of a sample's non-special tokens predicted: 80% [MASK], 10% random, 10% unchanged (next-token: every token is)"),
      int_field(P, "pretrain.seed", KEY(pretrain.seed), 0, kMaxSeed, "seeds the initial weights, the sample order, the masks and dropout"),
      int_field(P, "pretrain.checkpoint_steps", KEY(pretrain.checkpoint_steps), 1, kMaxSteps, "a durable checkpoint every N steps (or runtime.flush_seconds), and on SIGTERM/SIGINT"),
      int_field(P, "pretrain.eval_steps", KEY(pretrain.eval_steps), 1, kMaxSteps, "held-out loss and accuracy every N steps"),
      int_field(P, "pretrain.eval_samples", KEY(pretrain.eval_samples), 1, 1'000'000, "held-out samples evaluated, each with fixed masks"),
      enum_field<SaveDtype>(P, "pretrain.save_dtype", KEY(pretrain.save_dtype), "dtype of the exported Hugging Face weights: float32 | float16"),
      string_field(P|Steer, "pretrain.model_out", KEY(pretrain.model_out), {}, "folder of the trained model (Hugging Face layout); empty = <output.dir>/model"),
      string_field(P|Steer, "pretrain.init_out", KEY(pretrain.init_out), {}, "folder of the step-0 weights (Hugging Face layout); empty = <output.dir>/init"),
      int_field(S, "segment.documents", KEY(segment.documents), 0, 100000, "test documents per subset; 0 = Choi's counts (400 of 3-11, 100 each of 3-5, 6-8, 9-11)"),
      int_field(S, "segment.dev_documents", KEY(segment.dev_documents), 1, 100000, "documents of 3-11 (another seed) on which the summary chooses each model method's best layer"),
      int_field(S, "segment.seed", KEY(segment.seed), 0, kMaxSeed, "seeds the draw of the test documents"),
      int_field(S, "segment.block_window", KEY(segment.block_window), 1, 1000, "sentences per block on each side of a gap (TextTiling and the depth-score methods)"),
      int_field(S, "segment.smoothing", KEY(segment.smoothing), 0, 1000, "gap scores averaged over +-N neighbouring gaps before the depth scores; 0 = none"),
      int_field(S, "segment.c99_mask", KEY(segment.c99_mask), 1, 101, "side of C99's rank mask, odd (Choi: 11)"),
      int_field(S, "segment.attention_layers", KEY(segment.attention_layers), 1, 1000, "the final layers whose attention across gaps the attention-final method averages"),
      string_field(S, "segment.method", KEY(segment.method), {"heads-c99", "heads-depth", "attention"}, "what `segment --text` uses: heads-c99 | heads-depth | attention (of segment.layer)"),
      int_field(S, "segment.layer", KEY(segment.layer), -1, 1000, "the layer `segment --text` uses; -1 = the model's last"),
      int_field(X, "prune.random_seeds", KEY(prune.random_seeds), 1, 1000, "random orders of the heads (seeds 1 ... N): the band the other orders are judged against"),
      string_field(X, "prune.scores_from", KEY(prune.scores_from), {}, "a complete run store of the same model: its per-head score is one more order; empty = none"),
      choices_field(X, "prune.score", KEY(prune.score), score_names(), score_help()),
      string_field(R|P|S|X|Steer, "output.dir", KEY(output.dir), {}, "folder of store.h5 and the report (pretrain: checkpoints, loss curves) - where, not what"),
      bool_field(R|P|S|X|Steer, "output.overwrite", KEY(output.overwrite), "replace an existing store (or checkpoint) made with a different config"),
      bool_field(R|S|X|Steer, "output.report", KEY(output.report), "write the report when the run ends"),
      int_field(R|Steer, "output.report_max_bytes", KEY(output.report_max_bytes), 1 << 20, int64_t(1) << 40, "size budget of report.html; large examples are block-pooled to fit"),
      int_field(R|P|S|X|Steer, "runtime.threads", KEY(runtime.threads), 0, 4096, "threads per rank; 0 = OMP_NUM_THREADS, SLURM_CPUS_PER_TASK, else all cores"),
      int_field(R|S|X, "runtime.batch_size", KEY(runtime.batch_size), 1, 65536, "samples per forward pass"),
      int_field(R|S|X, "runtime.unit_size", KEY(runtime.unit_size), 1, kMaxCount, "samples per work unit (the resume granularity; independent of the rank count)"),
      int_field(R|Steer, "runtime.attention_rows", KEY(runtime.attention_rows), 0, kSeqLen.hi, "query rows per attention tile on the CPU (long contexts: no [batch, heads, T, T] maps), rounded up to a multiple of 128; 0 = whole maps for T <= 128, else tiles of 128; >= T = whole maps. Results do not change"),
      enum_field<Device>(R|Steer, "runtime.device", KEY(runtime.device), "auto = the local GPU when built with CUDA and one is visible, else CPU"),
      double_field(R|P|S|X|Steer, "runtime.progress_seconds", KEY(runtime.progress_seconds), 0.0, 1e6, true, "seconds between progress lines when not on a terminal"),
      int_field(R|S|X|Steer, "runtime.flush_units", KEY(runtime.flush_units), 1, kMaxCount, "make progress durable (resume state) every N completed work units"),
      double_field(R|P|S|X|Steer, "runtime.flush_seconds", KEY(runtime.flush_seconds), 0.0, 1e7, true, "… or every N seconds, whichever comes first"),
      string_field(R|P|S|X|Steer, "runtime.launcher", KEY(runtime.launcher), {"srun-pmix", "srun-pmi2", "mpirun"}, "how ctxsim submit's job scripts start the ranks: srun --mpi=pmix | srun --mpi=pmi2 | mpirun (a site whose srun lacks a PMI for Open MPI)"),
      // clang-format on
  };
  return fields;
}
#undef KEY

const std::vector<std::string>& sections() {
  static const std::vector<std::string> s = {"corpus",  "samples", "model",  "selection", "statistics", "pretrain",
                                             "segment", "prune",   "output", "runtime",   "sweep"};
  return s;
}

const Field* find_field(const std::string& path) {
  for (const auto& f : schema())
    if (f.path == path) return &f;
  return nullptr;
}

const Field* field_of_key(const std::string& key, std::string* sub) {
  if (sub) sub->clear();
  if (const Field* f = find_field(key)) return f;
  const size_t dot = key.find('.');
  if (dot == std::string::npos) return nullptr;
  const Field* f = find_field(key.substr(0, dot));
  if (!f || std::find(f->subkeys.begin(), f->subkeys.end(), key.substr(dot + 1)) == f->subkeys.end()) return nullptr;
  if (sub) *sub = key.substr(dot + 1);
  return f;
}

std::vector<std::string> keys_of(const std::string& section) {
  if (const Field* f = find_field(section)) return f->subkeys;  // a section that is one key
  std::vector<std::string> out;
  for (const auto& f : schema())
    if (f.path.compare(0, section.size() + 1, section + ".") == 0) out.push_back(f.path.substr(section.size() + 1));
  return out;
}

}  // namespace ctxsim
