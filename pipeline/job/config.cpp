#include "pipeline/job/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <limits>
#include <set>
#include <sstream>

#include "stages/error.h"
#include "stages/files.h"

namespace ctxsim {
namespace {

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

constexpr int64_t kBig = std::numeric_limits<int64_t>::max() / 2;

std::string range_text(int64_t lo, int64_t hi) {
  if (hi >= kBig) return ">= " + std::to_string(lo);
  return "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

int64_t parse_int(const YAML::Node& n, const std::string& where, const std::string& key,
                  int64_t lo, int64_t hi, const std::string& example) {
  const std::string expect = "expected an integer " + range_text(lo, hi);
  if (!n.IsScalar())
    throw Error(where + ": " + key, expect + ", got " + shown(n), "set " + key + " to a whole number such as " + example);
  const std::string& s = n.Scalar();
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE)
    throw Error(where + ": " + key, expect + ", got " + shown(n), "set " + key + " to a whole number such as " + example);
  if (v < lo || v > hi)
    throw Error(where + ": " + key, expect + ", got " + s, "use a value " + range_text(lo, hi));
  return v;
}

double parse_double(const YAML::Node& n, const std::string& where, const std::string& key,
                    double lo, double hi, bool lo_open, const std::string& example) {
  const std::string interval = std::string(lo_open ? "(" : "[") + std::to_string(lo).substr(0, 6) + ", " +
                               (std::isinf(hi) ? std::string("inf") : std::to_string(hi).substr(0, 6)) + "]";
  const std::string expect = "expected a number in " + interval;
  if (!n.IsScalar())
    throw Error(where + ": " + key, expect + ", got " + shown(n), "set " + key + " to a number such as " + example);
  const std::string& s = n.Scalar();
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v))
    throw Error(where + ": " + key, expect + ", got " + shown(n), "set " + key + " to a number such as " + example);
  if (v < lo || v > hi || (lo_open && v == lo))
    throw Error(where + ": " + key, expect + ", got " + s, "use a value in " + interval);
  return v;
}

bool parse_bool(const YAML::Node& n, const std::string& where, const std::string& key) {
  bool v = false;
  if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v))
    throw Error(where + ": " + key, "expected true or false, got " + shown(n), "set " + key + " to true or false");
  return v;
}

std::string parse_string(const YAML::Node& n, const std::string& where, const std::string& key,
                         const std::vector<std::string>& choices) {
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

template <class E>
const std::vector<std::pair<std::string, E>>& choices_of();
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
const std::vector<std::pair<std::string, Precision>>& choices_of() {
  static const std::vector<std::pair<std::string, Precision>> c = {
      {"float32", Precision::Float32}, {"bfloat16", Precision::BFloat16}, {"float64", Precision::Float64}};
  return c;
}
template <>
const std::vector<std::pair<std::string, HeadVector>>& choices_of() {
  static const std::vector<std::pair<std::string, HeadVector>> c = {{"context", HeadVector::Context},
                                                                    {"projected", HeadVector::Projected}};
  return c;
}
template <>
const std::vector<std::pair<std::string, Device>>& choices_of() {
  static const std::vector<std::pair<std::string, Device>> c = {{"auto", Device::Auto}, {"cpu", Device::Cpu}, {"cuda", Device::Cuda}};
  return c;
}

}  // namespace

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

namespace {

// ------------------------------------------------------------------------ schema ---------

// One key: its path, help, how it is read, written and copied, and whether it determines a run's
// results (the identity of a store) or only steers how the run goes. The defaults are Config's
// own member initialisers.
struct Field {
  std::string path;  // "samples.seq_len"
  std::string help;  // meaning, units, sentinels: the comment in the effective config
  std::function<void(Config&, const YAML::Node&, const std::string& where)> set;
  std::function<void(const Config&, YAML::Emitter&)> emit;
  std::function<void(const Config& from, Config& to)> copy;
  bool determines_results = true;
  Field& steering() {
    determines_results = false;
    return *this;
  }
};

template <class T>
using Ref = T& (*)(Config&);

template <class T>
const T& cref(Ref<T> ref, const Config& c) { return ref(const_cast<Config&>(c)); }

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
          [=](Config& c, const YAML::Node& n, const std::string& w) {
            ref(c) = parse_double(n, w, path, lo, hi, lo_open, example);
          },
          [=](const Config& c, YAML::Emitter& e) { e << cref(ref, c); }, copier(ref)};
}

Field bool_field(std::string path, Ref<bool> ref, std::string help) {
  return {path, std::move(help),
          [=](Config& c, const YAML::Node& n, const std::string& w) { ref(c) = parse_bool(n, w, path); },
          [=](const Config& c, YAML::Emitter& e) { e << cref(ref, c); }, copier(ref)};
}

Field string_field(std::string path, Ref<std::string> ref, std::vector<std::string> choices, std::string help) {
  return {path, std::move(help),
          [=](Config& c, const YAML::Node& n, const std::string& w) { ref(c) = parse_string(n, w, path, choices); },
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
              out.push_back(parse_item(n[i], location(w.substr(0, w.find(':')), n[i].Mark()),
                                       path + "[" + std::to_string(i) + "]"));
            ref(c) = std::move(out);
          },
          [=](const Config& c, YAML::Emitter& e) {
            e << YAML::Flow << YAML::BeginSeq;
            for (const auto& v : cref(ref, c)) e << v;
            e << YAML::EndSeq;
          },
          copier(ref)};
}

const std::vector<Field>& schema() {
  static const std::vector<Field> fields = [] {
    std::vector<Field> f;
    f.push_back(enum_field<CorpusFormat>("corpus.format", [](Config& c) -> CorpusFormat& { return c.corpus.format; },
                                         "brown (one sentence per line, word/tag) | text | jsonl"));
    f.push_back(string_field("corpus.path", [](Config& c) -> std::string& { return c.corpus.path; }, {},
                             "corpus folder or file, relative to the working directory"));
    f.push_back(string_field("corpus.text_field", [](Config& c) -> std::string& { return c.corpus.text_field; }, {},
                             "jsonl: the member holding each document's text"));
    f.push_back(enum_field<InvalidUtf8>("corpus.invalid_utf8", [](Config& c) -> InvalidUtf8& { return c.corpus.invalid_utf8; },
                                        "error | replace (invalid bytes become U+FFFD)"));
    f.push_back(int_field("corpus.max_documents", [](Config& c) -> int64_t& { return c.corpus.max_documents; }, 0, kBig,
                          "0 = all documents, else the first N in corpus order"));
    f.push_back(int_field("samples.seq_len", [](Config& c) -> int64_t& { return c.samples.seq_len; }, 3, 8192,
                          "T: tokens per sample including [CLS] and [SEP]"));
    f.push_back(enum_field<WindowMode>("samples.windows", [](Config& c) -> WindowMode& { return c.samples.windows; },
                                       "sentences: a window at every stride-th sentence start | documents: one per document"));
    f.push_back(int_field("samples.stride_sentences", [](Config& c) -> int64_t& { return c.samples.stride_sentences; }, 1, kBig,
                          "sentences mode: a window starts every N sentences"));
    f.push_back(int_field("samples.num_samples", [](Config& c) -> int64_t& { return c.samples.num_samples; }, 1, kBig,
                          "windows drawn with the seeded shuffle (all when fewer exist)"));
    f.push_back(int_field("samples.seed", [](Config& c) -> int64_t& { return c.samples.seed; }, 0,
                          std::numeric_limits<int64_t>::max(), "SplitMix64 seed of the draw"));
    f.push_back(string_field("model.path", [](Config& c) -> std::string& { return c.model.path; }, {},
                             "Hugging Face BERT folder: config.json, model.safetensors, vocab.txt"));
    f.push_back(string_field("model.name", [](Config& c) -> std::string& { return c.model.name; }, {},
                             "or a model name found offline in the Hugging Face cache (e.g. bert-base-uncased)"));
    f.push_back(string_field("model.vocab", [](Config& c) -> std::string& { return c.model.vocab; }, {},
                             "vocab.txt; empty = the model folder's vocab.txt"));
    f.push_back(enum_field<LowerCase>("model.do_lower_case", [](Config& c) -> LowerCase& { return c.model.do_lower_case; },
                                      "auto = tokenizer_config.json, else true (uncased)"));
    f.push_back(enum_field<Precision>("model.dtype", [](Config& c) -> Precision& { return c.model.dtype; },
                                      "compute dtype; float64 for count-for-count checks"));
    f.push_back(enum_field<HeadVector>("model.vector", [](Config& c) -> HeadVector& { return c.model.vector; },
                                       "head output: context (sum_j A_ij v_j) | projected (o_i W_O[h])"));
    f.push_back(double_field("statistics.attention_threshold", [](Config& c) -> double& { return c.statistics.attention_threshold; },
                             0.0, 1.0, false, "beta: a pair is high-attention when max(A_ij, A_ji) >= beta"));
    f.push_back(list_field<std::string>("statistics.separators", [](Config& c) -> std::vector<std::string>& { return c.statistics.separators; },
                                        "tokens", [](const YAML::Node& n, const std::string& w, const std::string& k) {
                                          const std::string s = parse_string(n, w, k, {});
                                          if (s.empty()) throw Error(w + ": " + k, "a separator token cannot be empty", "remove it");
                                          return s;
                                        }, "tokens whose attention mass is measured (vocabulary spellings)"));
    f.push_back(list_field<int64_t>("statistics.examples", [](Config& c) -> std::vector<int64_t>& { return c.statistics.examples; },
                                    "sample ids", [](const YAML::Node& n, const std::string& w, const std::string& k) {
                                      return parse_int(n, w, k, 0, kBig, "0");
                                    }, "sample ids whose full attention and similarity matrices are stored"));
    f.push_back(int_field("statistics.top_anchors", [](Config& c) -> int64_t& { return c.statistics.top_anchors; }, 1, 1000,
                          "anchors listed per head in summaries and reports"));
    f.push_back(string_field("output.dir", [](Config& c) -> std::string& { return c.output.dir; }, {},
                             "folder of store.h5 and the report"));
    f.push_back(bool_field("output.overwrite", [](Config& c) -> bool& { return c.output.overwrite; },
                           "replace an existing store made with a different config").steering());
    f.push_back(bool_field("output.report", [](Config& c) -> bool& { return c.output.report; },
                           "write the report when the run ends").steering());
    f.push_back(int_field("output.report_max_bytes", [](Config& c) -> int64_t& { return c.output.report_max_bytes; }, 1 << 20, kBig,
                          "size budget of report.html; large examples are block-pooled to fit").steering());
    f.push_back(int_field("runtime.threads", [](Config& c) -> int64_t& { return c.runtime.threads; }, 0, 4096,
                          "threads per rank; 0 = OMP_NUM_THREADS, SLURM_CPUS_PER_TASK, else all cores").steering());
    f.push_back(int_field("runtime.batch_size", [](Config& c) -> int64_t& { return c.runtime.batch_size; }, 1, 65536,
                          "samples per forward pass"));
    f.push_back(int_field("runtime.unit_size", [](Config& c) -> int64_t& { return c.runtime.unit_size; }, 1, kBig,
                          "samples per work unit (the resume granularity; independent of the rank count)"));
    f.push_back(enum_field<Device>("runtime.device", [](Config& c) -> Device& { return c.runtime.device; },
                                   "auto = the local GPU when built with CUDA and one is visible, else CPU").steering());
    f.push_back(double_field("runtime.progress_seconds", [](Config& c) -> double& { return c.runtime.progress_seconds; },
                             0.0, 1e6, true, "seconds between progress lines when not on a terminal").steering());
    f.push_back(int_field("runtime.flush_units", [](Config& c) -> int64_t& { return c.runtime.flush_units; }, 1, kBig,
                          "make progress durable (resume state) every N completed work units").steering());
    f.push_back(double_field("runtime.flush_seconds", [](Config& c) -> double& { return c.runtime.flush_seconds; }, 0.0, 1e7, true,
                             "… or every N seconds, whichever comes first").steering());
    return f;
  }();
  return fields;
}

const std::vector<std::string>& sections() {
  static const std::vector<std::string> s = {"corpus", "samples", "model", "selection", "statistics", "output", "runtime", "sweep"};
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

// An unknown key: suggest a close spelling, or the section it belongs to.
[[noreturn]] void unknown_key(const std::string& where, const std::string& section, const std::string& key) {
  const std::string full = section.empty() ? key : section + "." + key;
  std::vector<std::string> siblings = section.empty() ? sections() : keys_of(section);
  if (section == "selection") siblings = kRuleKeys;
  std::string guess = did_you_mean(key, siblings);
  if (!guess.empty())
    throw Error(where + ": " + full, "unknown key", "did you mean '" + (section.empty() ? "" : section + ".") + guess + "'?");
  for (const auto& f : schema()) {
    const std::string leaf = f.path.substr(f.path.find('.') + 1);
    if (leaf == key || did_you_mean(key, {leaf}) == leaf)
      throw Error(where + ": " + full, "unknown key", "did you mean '" + f.path + "'? (it belongs under " +
                                                          f.path.substr(0, f.path.find('.')) + ":)");
  }
  throw Error(where + ": " + full, "unknown key", "the keys " + (section.empty() ? std::string("at the top level") : "of " + section) +
                                                      " are: " + join(siblings));
}

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
    r.value = parse_double(value, where, path, -std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::infinity(), false, "5.0");
  } else {
    unknown_key(where, "selection", key);
  }
  return r;
}

std::vector<SelectionRule> parse_selection(const YAML::Node& n, const std::string& file) {
  const std::string where = location(file, n.Mark());
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

void check_duplicates(const YAML::Node& map, const std::string& file, const std::string& section);

std::string flow_text(const YAML::Node& n) {
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

// Checks one sweep value by setting it on a scratch config: the same errors as the config.
void check_sweep_value(const std::string& key, const YAML::Node& value, const std::string& where) {
  Config scratch;
  if (key.compare(0, 10, "selection.") == 0) {
    parse_rule(key.substr(10), value, where, key);
    return;
  }
  const Field* f = find_field(key);
  if (!f) {
    const std::string guess = did_you_mean(key, config_keys());
    throw Error(where + ": sweep." + key, "unknown key", guess.empty() ? "sweep keys are dotted config keys, e.g. samples.seq_len"
                                                                       : "did you mean '" + guess + "'?");
  }
  if (key == "output.dir") throw Error(where + ": sweep.output.dir", "cannot be swept", "each point writes under output.dir/<sweep>/<point>");
  f->set(scratch, value, where);
}

SweepAxis parse_axis(const std::vector<std::pair<std::string, YAML::Node>>& entries, const std::string& file, const std::string& where) {
  SweepAxis axis;
  axis.where = where;
  for (const auto& [key, list] : entries) {
    const std::string lw = location(file, list.Mark());
    if (!list.IsSequence() || list.size() == 0)
      throw Error(lw + ": sweep." + key, "expected a non-empty list of values, got " + shown(list), "write e.g. " + key + ": [a, b]");
    if (key.compare(0, 10, "selection.") != 0 && !find_field(key)) check_sweep_value(key, list[0], lw);  // unknown key message
    std::vector<std::string> texts;
    for (size_t i = 0; i < list.size(); ++i) {
      check_sweep_value(key, list[i], location(file, list[i].Mark()) + ": sweep." + key + "[" + std::to_string(i) + "]");
      texts.push_back(flow_text(list[i]));
    }
    if (!axis.values.empty() && texts.size() != axis.size())
      throw Error(lw + ": sweep.zip." + key, "has " + std::to_string(texts.size()) + " values, the group's first key has " +
                                                 std::to_string(axis.size()), "give every key of a zip group the same number of values");
    axis.keys.push_back(key);
    axis.values.push_back(std::move(texts));
  }
  return axis;
}

void parse_sweep(Config& c, const YAML::Node& n, const std::string& file) {
  const std::string where = location(file, n.Mark());
  if (!n.IsMap()) throw Error(where + ": sweep", "expected a mapping of dotted keys to lists, got " + shown(n),
                              "write e.g. 'sweep: {samples.seq_len: [64, 128]}'");
  check_duplicates(n, file, "sweep");
  for (const auto& kv : n) {
    const std::string key = kv.first.Scalar();
    const std::string kw = location(file, kv.first.Mark());
    if (key == "name") {
      c.sweep_name = parse_string(kv.second, kw, "sweep.name", {});
    } else if (key == "zip") {
      if (!kv.second.IsSequence()) throw Error(kw + ": sweep.zip", "expected a list of groups, got " + shown(kv.second),
                                               "write e.g. 'zip: [{model.path: [a, b], model.dtype: [float32, float64]}]'");
      for (const auto& group : kv.second) {
        if (!group.IsMap() || group.size() == 0)
          throw Error(location(file, group.Mark()) + ": sweep.zip", "each group maps keys to lists of equal length", "see configs/sweeps/");
        std::vector<std::pair<std::string, YAML::Node>> entries;
        for (const auto& e : group) entries.emplace_back(e.first.Scalar(), e.second);
        c.sweep.push_back(parse_axis(entries, file, location(file, group.Mark())));
      }
    } else {
      c.sweep.push_back(parse_axis({{key, kv.second}}, file, kw));
    }
  }
}

void check_duplicates(const YAML::Node& map, const std::string& file, const std::string& section) {
  std::set<std::string> seen;
  for (const auto& kv : map) {
    const std::string k = kv.first.Scalar();
    if (!seen.insert(k).second)
      throw Error(location(file, kv.first.Mark()) + ": " + (section.empty() ? k : section + "." + k),
                  "the key appears twice", "keep one of them");
  }
}

void apply_document(Config& c, const YAML::Node& root, const std::string& file) {
  check_duplicates(root, file, "");
  for (const auto& kv : root) {
    const std::string section = kv.first.Scalar();
    const std::string where = location(file, kv.first.Mark());
    if (std::find(sections().begin(), sections().end(), section) == sections().end()) unknown_key(where, "", section);
    if (section == "selection") {
      c.selection = parse_selection(kv.second, file);
      c.origin["selection"] = location(file, kv.second.Mark());
      continue;
    }
    if (section == "sweep") {
      parse_sweep(c, kv.second, file);
      continue;
    }
    if (!kv.second.IsMap()) {
      if (kv.second.IsNull()) continue;  // "runtime:" with nothing under it: all defaults
      throw Error(where + ": " + section, "expected a mapping of keys (" + join(keys_of(section)) + "), got " + shown(kv.second),
                  "indent the keys of " + section + " under it");
    }
    check_duplicates(kv.second, file, section);
    for (const auto& entry : kv.second) {
      const std::string key = entry.first.Scalar();
      const Field* f = find_field(section + "." + key);
      if (!f) unknown_key(location(file, entry.first.Mark()), section, key);
      const std::string vwhere = location(file, entry.second.Mark());
      f->set(c, entry.second, vwhere);
      c.origin[f->path] = vwhere;
    }
  }
}

void apply_override(Config& c, const std::string& text) {
  const std::string where = "command line '" + text + "'";
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error(where, "an override is key.sub=value", "write e.g. samples.seq_len=64");
  const std::string key = text.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw Error(where, "the value is not valid YAML: " + e.msg, "quote it, e.g. key='value'");
  }
  if (key == "selection") {
    c.selection = parse_selection(value, where);
    c.origin["selection"] = "command line";
    return;
  }
  if (key.compare(0, 10, "selection.") == 0) {
    const std::string rule = key.substr(10);
    c.selection = {parse_rule(rule, value, where, key)};
    c.origin["selection"] = "command line";
    return;
  }
  const Field* f = find_field(key);
  if (!f) {
    std::vector<std::string> all = config_keys();
    const std::string guess = did_you_mean(key, all);
    throw Error(where + ": " + key, "unknown key",
                guess.empty() ? "run 'ctxsim validate CONFIG' to see every key" : "did you mean '" + guess + "'?");
  }
  f->set(c, value, where);
  c.origin[f->path] = "command line";
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

// ---------------------------------------------------------------------- public API -------

std::string Config::where(const std::string& key) const {
  const auto it = origin.find(key);
  if (it != origin.end()) return it->second + ": " + key;
  return (source.empty() ? std::string("default") : source + " (default)") + ": " + key;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(1, std::min<size_t>(3, word.size() / 3)) + 1;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_d) { best_d = d; best = c; }
  }
  return best;
}

std::string identity_yaml(Config c) {
  const Config defaults;
  for (const auto& f : schema())
    if (!f.determines_results) f.copy(defaults, c);
  return to_yaml(c, false);
}

SweepPlan expand_sweep(const Config& c) {
  namespace fs = std::filesystem;
  SweepPlan plan;
  plan.name = !c.sweep_name.empty() ? c.sweep_name : c.source.empty() ? std::string("sweep") : fs::path(c.source).stem().string();
  // Fold the axes that do not change the forward pass: selection rules, the attention threshold
  // and the separator set. Every combination becomes one rule of every point's rule list.
  std::vector<const SweepAxis*> axes;
  std::vector<std::string> rule_texts, betas, seps;
  for (const auto& a : c.sweep) {
    const std::string& k = a.keys[0];
    const bool single = a.keys.size() == 1;
    if (single && k.compare(0, 10, "selection.") == 0) {
      for (const auto& v : a.values[0]) rule_texts.push_back(k.substr(10) + ": " + v);
    } else if (single && k == "statistics.attention_threshold") {
      betas = a.values[0];
    } else if (single && k == "statistics.separators") {
      seps = a.values[0];
    } else {
      axes.push_back(&a);
      continue;
    }
    plan.folded.push_back(k + " (" + std::to_string(a.size()) + " values)");
  }
  std::string rules;
  if (!plan.folded.empty()) {
    if (rule_texts.empty()) {
      std::ostringstream base;
      for (const auto& r : c.selection) {
        base.str("");
        base << r.key() << ": " << r.value;
        rule_texts.push_back(base.str());
      }
    }
    if (betas.empty()) betas.push_back("");
    if (seps.empty()) seps.push_back("");
    for (const auto& r : rule_texts)
      for (const auto& b : betas)
        for (const auto& sp : seps)
          rules += std::string(rules.empty() ? "" : ", ") + "{" + r + (b.empty() ? "" : ", attention_threshold: " + b) +
                   (sp.empty() ? "" : ", separators: " + sp) + "}";
  }
  size_t total = 1;
  for (const auto* a : axes) total *= a->size();
  const auto safe = [](std::string s) {
    for (auto& ch : s)
      if (ch == '/' || ch == ' ' || ch == '"' || ch == '\'') ch = ch == '/' ? '_' : '-';
    return s;
  };
  for (size_t i = 0; i < total; ++i) {
    SweepPoint p;
    p.index = int64_t(i);
    size_t rest = i;
    // The last axis varies fastest.
    std::vector<size_t> pick(axes.size());
    for (size_t k = axes.size(); k-- > 0;) {
      pick[k] = rest % axes[k]->size();
      rest /= axes[k]->size();
    }
    for (size_t k = 0; k < axes.size(); ++k)
      for (size_t q = 0; q < axes[k]->keys.size(); ++q) {
        const std::string& value = axes[k]->values[q][pick[k]];
        p.overrides.push_back(axes[k]->keys[q] + "=" + value);
        // Paths are named by their last component: model.path=data/models/x -> model.path=x.
        const std::string shown_value = value.find('/') != std::string::npos ? fs::path(value).filename().string() : value;
        p.name += (p.name.empty() ? "" : ",") + safe(axes[k]->keys[q] + "=" + shown_value);
      }
    if (!rules.empty()) p.overrides.push_back("selection=[" + rules + "]");
    if (p.name.empty()) p.name = "all";
    p.output_dir = (fs::path(c.output.dir) / plan.name / p.name).string();
    p.overrides.push_back("output.dir=" + p.output_dir);
    plan.points.push_back(std::move(p));
  }
  return plan;
}

std::vector<std::string> config_keys() {
  std::vector<std::string> out;
  for (const auto& f : schema()) out.push_back(f.path);
  for (const auto& k : kRuleKeys) out.push_back("selection." + k);
  return out;
}

Config parse_config(const std::string& yaml, const std::string& name, const std::vector<std::string>& overrides) {
  Config c;
  c.source = name;
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::ParserException& e) {
    throw Error(location(name, e.mark), "malformed YAML: " + e.msg,
                "fix the syntax at that line (indentation, a missing ':' or an unclosed quote or bracket)");
  }
  if (!root.IsDefined() || root.IsNull())
    throw Error(name, "the config is empty", "start from configs/default.yaml; 'ctxsim validate configs/default.yaml' prints every key");
  if (!root.IsMap())
    throw Error(location(name, root.Mark()), "expected a mapping of sections (" + join(sections()) + "), got " + shown(root),
                "start from configs/default.yaml");
  apply_document(c, root, name);
  for (const auto& o : overrides) apply_override(c, o);
  return c;
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  namespace fs = std::filesystem;
  if (!fs::exists(path))
    throw Error(path, "the config file does not exist", "give the path of a YAML config, e.g. configs/default.yaml");
  if (fs::is_directory(path))
    throw Error(path, "is a folder, not a config file", "give the path of a YAML config, e.g. configs/default.yaml");
  return parse_config(read_file_bytes(path, kMaxConfigBytes, "the config file", "check its permissions"), path, overrides);
}

void check_paths(const Config& c) {
  namespace fs = std::filesystem;
  const auto must_exist = [&](const std::string& key, const std::string& value, const std::string& fix) {
    if (!value.empty() && !fs::exists(value))
      throw Error(c.where(key), "'" + value + "' does not exist", fix);
  };
  must_exist("corpus.path", c.corpus.path,
             "run scripts/setup.sh (it fetches the Brown corpus into data/brown) or point corpus.path at your corpus");
  must_exist("model.path", c.model.path,
             "point model.path at a Hugging Face BERT folder, or make a random one with 'ctxsim init-model'");
  must_exist("model.vocab", c.model.vocab,
             "run scripts/setup.sh (it writes data/vocab/bert-base-uncased.txt) or point model.vocab at a vocab.txt");
  if (c.model.path.empty() && c.model.name.empty() && c.model.vocab.empty())
    throw Error(c.where("model.path"), "no model given",
                "set model.path (a Hugging Face BERT folder), model.name (found in the HF cache) or at least model.vocab");
  if (!c.model.path.empty() && !fs::is_directory(c.model.path))
    throw Error(c.where("model.path"), "'" + c.model.path + "' is not a folder",
                "point model.path at the folder holding config.json and model.safetensors");
}

std::string to_yaml(const Config& c, bool with_comments) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  for (const auto& section : sections()) {
    if (section == "sweep") continue;  // a sweep describes several runs, not one run's settings
    e << YAML::Key << section << YAML::Value;
    if (section == "selection") {
      e << YAML::BeginSeq;
      for (const auto& r : c.selection) {
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
      if (with_comments) e << YAML::Comment("SPEC §3 rules, all evaluated on one forward pass");
      continue;
    }
    e << YAML::BeginMap;
    for (const auto& f : schema()) {
      if (f.path.compare(0, section.size() + 1, section + ".") != 0) continue;
      e << YAML::Key << f.path.substr(section.size() + 1) << YAML::Value;
      f.emit(c, e);
      if (with_comments) e << YAML::Comment(f.help);
    }
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace ctxsim
