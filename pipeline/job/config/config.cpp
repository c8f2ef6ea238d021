#include "pipeline/job/config/config.h"
#include "pipeline/job/config/config_schema.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/model_folder.h"
#include "stages/base/suggest.h"
#include "stages/text/utf8.h"

namespace ctxsim {
namespace {

// An unknown key: suggest a close spelling, or the section it belongs to.
[[noreturn]] void unknown_key(const std::string& where, const std::string& section, const std::string& key) {
  const std::string full = section.empty() ? key : section + "." + key;
  std::vector<std::string> siblings = section.empty() ? sections() : keys_of(section);
  std::string guess = did_you_mean(key, siblings);
  if (!guess.empty())
    throw Error(where + ": " + full, "unknown key", "did you mean '" + (section.empty() ? "" : section + ".") + guess + "'?");
  for (const auto& f : schema()) {
    const std::string leaf = f.path.substr(f.path.find('.') + 1);
    if (leaf == key || did_you_mean(key, {leaf}) == leaf)
      throw Error(where + ": " + full, "unknown key",
                  "did you mean '" + f.path + "'? (it belongs under " + f.path.substr(0, f.path.find('.')) + ":)");
  }
  throw Error(where + ": " + full, "unknown key",
              "the keys " + (section.empty() ? std::string("at the top level") : "of " + section) + " are: " + join(siblings));
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
  std::string sub;
  const Field* f = field_of_key(key, &sub);
  if (!f) {
    const std::string guess = did_you_mean(key, config_keys());
    throw Error(where + ": sweep." + key, "unknown key",
                guess.empty() ? "sweep keys are dotted config keys, e.g. samples.seq_len" : "did you mean '" + guess + "'?");
  }
  if (key == "output.dir")
    throw Error(where + ": sweep.output.dir", "cannot be swept", "each point writes under output.dir/<sweep>/<point>");
  if (!sub.empty())
    f->set_sub(scratch, sub, value, where);
  else
    f->set(scratch, value, where, where);
}

SweepAxis parse_axis(const std::vector<std::pair<std::string, YAML::Node>>& entries, const std::string& file, const std::string& where) {
  SweepAxis axis;
  axis.where = where;
  for (const auto& [key, list] : entries) {
    const std::string lw = location(file, list.Mark());
    if (!list.IsSequence() || list.size() == 0)
      throw Error(lw + ": sweep." + key, "expected a non-empty list of values, got " + shown(list), "write e.g. " + key + ": [a, b]");
    if (!field_of_key(key)) check_sweep_value(key, list[0], lw);  // unknown key message
    std::vector<std::string> texts;
    for (size_t i = 0; i < list.size(); ++i) {
      check_sweep_value(key, list[i], location(file, list[i].Mark()) + ": sweep." + key + "[" + std::to_string(i) + "]");
      texts.push_back(flow_text(list[i]));
    }
    if (!axis.values.empty() && texts.size() != axis.size())
      throw Error(lw + ": sweep.zip." + key,
                  "has " + std::to_string(texts.size()) + " values, the group's first key has " + std::to_string(axis.size()),
                  "give every key of a zip group the same number of values");
    axis.keys.push_back(key);
    axis.values.push_back(std::move(texts));
  }
  return axis;
}

void parse_sweep(Config& c, const YAML::Node& n, const std::string& file) {
  const std::string where = location(file, n.Mark());
  if (!n.IsMap())
    throw Error(where + ": sweep", "expected a mapping of dotted keys to lists, got " + shown(n),
                "write e.g. 'sweep: {samples.seq_len: [64, 128]}'");
  check_duplicates(n, file, "sweep");
  for (const auto& kv : n) {
    const std::string key = kv.first.Scalar();
    const std::string kw = location(file, kv.first.Mark());
    if (key == "name") {
      c.sweep_name = parse_string(kv.second, kw, "sweep.name", {});
    } else if (key == "zip") {
      if (!kv.second.IsSequence())
        throw Error(kw + ": sweep.zip", "expected a list of groups, got " + shown(kv.second),
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
      throw Error(location(file, kv.first.Mark()) + ": " + (section.empty() ? k : section + "." + k), "the key appears twice",
                  "keep one of them");
  }
}

void apply_document(Config& c, const YAML::Node& root, const std::string& file) {
  check_duplicates(root, file, "");
  for (const auto& kv : root) {
    const std::string section = kv.first.Scalar();
    const std::string where = location(file, kv.first.Mark());
    if (std::find(sections().begin(), sections().end(), section) == sections().end()) unknown_key(where, "", section);
    c.file_sections.push_back(section);
    if (const Field* f = find_field(section)) {  // a section that is one key (selection)
      const std::string vwhere = location(file, kv.second.Mark());
      f->set(c, kv.second, file, vwhere);
      c.origin[f->path] = vwhere;
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
      f->set(c, entry.second, file, vwhere);
      c.origin[f->path] = vwhere;
    }
  }
}

void apply_override(Config& c, const std::string& text) {
  const std::string where = "command line '" + text + "'";
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw Error(where, "an override is key.sub=value", "write e.g. samples.seq_len=64");
  const std::string key = text.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(text.substr(eq + 1));
  } catch (const YAML::Exception& e) { throw Error(where, "the value is not valid YAML: " + e.msg, "quote it, e.g. key='value'"); }
  std::string sub;
  const Field* f = field_of_key(key, &sub);
  if (!f) {
    std::vector<std::string> all = config_keys();
    const std::string guess = did_you_mean(key, all);
    throw Error(where + ": " + key, "unknown key",
                guess.empty() ? "run 'ctxsim validate CONFIG' to see every key" : "did you mean '" + guess + "'?");
  }
  if (!sub.empty())
    f->set_sub(c, sub, value, where);  // selection.top_fraction=0.05: that one rule
  else
    f->set(c, value, where, where);
  c.origin[f->path] = "command line";
}

// output.dir may name its model: "{model}" becomes the last component of model.path (or
// model.name), so that one override of the model gives its results their own folder
// (configs/default.yaml: runs/default/{model}); a GGUF file's without its .gguf. Any other "{…}" is
// a typo.
void expand_output_dir(Config& c) {
  std::string& dir = c.output.dir;
  const std::string placeholder = "{model}";
  std::filesystem::path folder = std::filesystem::path(c.model.path.empty() ? c.model.name : c.model.path).lexically_normal();
  if (!folder.has_filename()) folder = folder.parent_path();  // "models/brown-bert/" ends in an empty component
  // A GGUF file names its results without the extension (runs/default/SmolLM2-135M-Instruct.Q4_1).
  const std::string model = (ModelFolder(folder.string()).is_gguf() ? folder.stem() : folder.filename()).string();
  for (size_t at = dir.find('{'); at != std::string::npos; at = dir.find('{', at)) {
    if (dir.compare(at, placeholder.size(), placeholder) != 0)
      throw Error(c.where("output.dir"), "'" + dir + "' has an unknown placeholder at '" + dir.substr(at) + "'",
                  "the one placeholder is {model} (the model folder's name)");
    if (model.empty() || model == "." || model == "..")
      throw Error(c.where("output.dir"), "'" + dir + "' names the model folder, but model.path and model.name give no folder name",
                  "set model.path, or write the folder into output.dir");
    dir.replace(at, placeholder.size(), model);
    at += model.size();
  }
}

}  // namespace

// ---------------------------------------------------------------------- public API -------

std::string Config::where(const std::string& key) const {
  const auto it = origin.find(key);
  if (it != origin.end()) return it->second + ": " + key;
  return (source.empty() ? std::string("default") : source + " (default)") + ": " + key;
}

std::string identity_yaml(Config c, JobKind kind) {
  const Config defaults;
  for (const auto& f : schema())
    if (!f.identifies(kind)) f.copy(defaults, c);
  // The segment section came after run and pretrain stores existed: their identity stays the
  // text it was (a key the stored text lacks compares as its default, identity_differences).
  return to_yaml(c, false, std::string(job_kinds()[size_t(kind.row)].section) == "segment" ? std::string() : "segment");
}

std::vector<std::string> identity_differences(const std::string& stored, const Config& ours, JobKind kind) {
  YAML::Node a;
  try {
    a = YAML::Load(stored);
  } catch (const YAML::Exception&) { return {"the store's config attribute is not YAML"}; }
  if (!a.IsMap()) return {"the store's config attribute is not a mapping"};
  const YAML::Node b = YAML::Load(identity_yaml(ours, kind));
  // A key the stored config lacks was written by a ctxsim that did not have it yet: it ran as
  // the key's default does.
  const YAML::Node defaults = YAML::Load(identity_yaml(Config{}, kind));
  // A key missing from a const map gives an invalid node, on which anything but IsDefined throws.
  const auto at = [](const YAML::Node& n, const std::string& key) { return n.IsDefined() && n.IsMap() ? n[key] : YAML::Node(); };
  const auto text = [](const YAML::Node& n) { return n.IsDefined() && !n.IsNull() ? flow_text(n) : std::string("(none)"); };
  std::vector<std::string> out;
  const auto compare = [&](const std::string& key, const YAML::Node& x, const YAML::Node& y) {
    if (text(x) != text(y)) out.push_back(key + ": " + text(x) + " → " + text(y));
  };
  for (const auto& section : sections()) {
    if (section == "sweep") continue;
    const YAML::Node sa = a[section], sb = at(b, section);  // a: non-const, so a missing section is a null node
    if (const Field* f = find_field(section)) {             // a section that is one key
      if (f->identifies(kind)) compare(section, sa.IsDefined() ? sa : at(defaults, section), sb);
      continue;
    }
    for (const auto& key : keys_of(section)) {
      if (!find_field(section + "." + key)->identifies(kind)) continue;
      const bool stored_has = sa.IsDefined() && sa.IsMap() && sa[key].IsDefined();
      compare(section + "." + key, stored_has ? at(sa, key) : at(at(defaults, section), key), at(sb, key));
    }
  }
  return out;
}

std::vector<std::string> config_keys() {
  std::vector<std::string> out;
  for (const auto& f : schema()) {
    out.push_back(f.path);
    for (const auto& sub : f.subkeys) out.push_back(f.path + "." + sub);
  }
  return out;
}

namespace {

// A config is UTF-8 text: a NUL or other control byte, or invalid UTF-8, means the path names
// some other file (a binary, a store). Said with the position and the byte, never the raw byte.
void require_text(const std::string& text, const std::string& name) {
  size_t bad = utf8::find_invalid(text);
  for (size_t i = 0; i < std::min(bad, text.size()); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7f) {
      bad = i;
      break;
    }
  }
  if (bad == utf8::npos) return;
  char byte[8];
  std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[bad]));
  throw Error(name + ": " + utf8::describe_offset(text, bad), std::string("not a YAML text file (byte ") + byte + ")",
              "give the path of a YAML config, e.g. configs/default.yaml");
}

// Two rules that would share a group in the store (the same rule, or values equal to the
// precision of the group's name).
void check_rules_distinct(const Config& c) {
  for (size_t i = 0; i < c.selection.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (c.selection[i].name() == c.selection[j].name())
        throw Error(c.where("selection"),
                    "rules " + std::to_string(j) + " and " + std::to_string(i) + " are the same rule (" + c.selection[i].name() + ")",
                    "remove one of them, or make them differ");
}

// Where a second document of yaml starts, if there is one. Not YAML::LoadAll: yaml-cpp 0.7's
// loop over documents never ends on a stray ',' at block level (each pass yields an empty
// document without consuming it; found by fuzzing); two passes of the parser are enough here.
std::optional<YAML::Mark> second_document(const std::string& yaml) {
  struct Starts : YAML::EventHandler {
    std::vector<YAML::Mark> documents;
    void OnDocumentStart(const YAML::Mark& m) override { documents.push_back(m); }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
  } starts;
  std::istringstream in(yaml);
  YAML::Parser parser(in);
  for (int pass = 0; pass < 2 && parser.HandleNextDocument(starts); ++pass) {}
  if (starts.documents.size() < 2) return std::nullopt;
  return starts.documents[1];
}

}  // namespace

Config parse_config(const std::string& yaml, const std::string& name, const std::vector<std::string>& overrides) {
  Config c;
  c.source = name;
  require_text(yaml, name);
  YAML::Node root;
  try {
    if (const auto second = second_document(yaml))
      throw Error(location(name, *second),
                  "a second YAML document starts here (after '---', or after text the first could not hold); a config is one",
                  "keep one document per file (a sweep: section describes several runs in one)");
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
  check_rules_distinct(c);
  if (!c.model.path.empty() && !c.model.name.empty())
    throw Error(c.where(c.origin.count("model.name") ? "model.name" : "model.path"),
                "model.path ('" + c.model.path + "') and model.name ('" + c.model.name + "') are both set; a job measures one model",
                "keep one: clear the other with an override such as model.name= (or model.path=)");
  expand_output_dir(c);
  // C99's rank mask is centred on its cell: an even side has no centre (validate says so, rather
  // than the job after its store is made).
  if (c.segment.c99_mask % 2 == 0)
    throw Error(c.where("segment.c99_mask"), std::to_string(c.segment.c99_mask) + " is even; C99's rank mask needs a centre cell",
                "use an odd size such as 11 (Choi's)");
  return c;
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  namespace fs = std::filesystem;
  const PathKind kind = path_kind(path, "config " + path);
  if (kind == PathKind::Missing)
    throw Error(path, "the config file does not exist", "give the path of a YAML config, e.g. configs/default.yaml");
  if (kind == PathKind::Folder)
    throw Error(path, "is a folder, not a config file", "give the path of a YAML config, e.g. configs/default.yaml");
  return parse_config(read_file_bytes(path, kMaxConfigBytes, "the config file",
                                      "give the path of a YAML config file (e.g. configs/default.yaml) that you may read"),
                      path, overrides);
}

JobKind job_kind_of(const Config& c) {
  const std::vector<JobKindRow>& rows = job_kinds();
  for (size_t i = 0; i < rows.size(); ++i)
    if (*rows[i].section && std::find(c.file_sections.begin(), c.file_sections.end(), rows[i].section) != c.file_sections.end())
      return JobKind{int(i)};
  return JobKind{};
}

JobKind job_kind_named(const std::string& name) {
  const std::vector<JobKindRow>& rows = job_kinds();
  for (size_t i = 0; i < rows.size(); ++i)
    if (name == rows[i].name) return JobKind{int(i)};
  CTXSIM_CHECK(false, "a job without a row in job_kinds(): " + name);
  return JobKind{};
}

void check_paths(const Config& c) {
  namespace fs = std::filesystem;
  const auto must_exist = [&](const std::string& key, const std::string& value, const std::string& fix) {
    if (!value.empty() && path_kind(value, c.where(key)) == PathKind::Missing)
      throw Error(c.where(key), "'" + value + "' does not exist", fix);
  };
  must_exist("corpus.path", c.corpus.path,
             "run scripts/setup.sh (it fetches the Brown corpus into data/brown) or point corpus.path at your corpus");
  must_exist("model.path", c.model.path, "point model.path at a Hugging Face model folder, or make a random one with 'ctxsim init-model'");
  must_exist("model.vocab", c.model.vocab,
             "run scripts/setup.sh (it writes data/vocab/bert-base-uncased.txt) or point model.vocab at a vocab.txt");
  if (c.model.path.empty() && c.model.name.empty() && c.model.vocab.empty())
    throw Error(c.where("model.path"), "no model given",
                "set model.path (a Hugging Face model folder), model.name (found in the HF cache) or at least model.vocab");
  if (!c.model.path.empty() && path_kind(c.model.path, c.where("model.path")) != PathKind::Folder && !ModelFolder(c.model.path).is_gguf())
    throw Error(c.where("model.path"), "'" + c.model.path + "' is neither a folder nor a .gguf file",
                "point model.path at the folder holding config.json and model.safetensors, or at a GGUF file");
}

std::string to_yaml(const Config& c, bool with_comments, const std::string& omit) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  for (const auto& section : sections()) {
    if (section == "sweep" || section == omit) continue;  // a sweep describes several runs, not one run's settings
    e << YAML::Key << section << YAML::Value;
    if (const Field* f = find_field(section)) {  // a section that is one key
      f->emit(c, e);
      if (with_comments) e << YAML::Comment(f->help);
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
