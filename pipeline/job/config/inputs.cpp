#include "pipeline/job/config/inputs.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "pipeline/job/parallel/log.h"
#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/gguf.h"
#include "stages/base/limits.h"
#include "stages/base/model_folder.h"
#include "stages/model/model_config.h"
#include "stages/text/bpe.h"
#include "stages/text/tokenizer_files.h"
#include "stages/text/tokenizer_json.h"

namespace fs = std::filesystem;

namespace ctxsim {

std::string resolve_hf_cache(const std::string& name) {
  std::string hub;
  if (const char* v = std::getenv("HF_HUB_CACHE"); v && *v) {
    hub = v;
  } else if (const char* h = std::getenv("HF_HOME"); h && *h) {
    hub = (fs::path(h) / "hub").string();
  } else {
    const char* home = std::getenv("HOME");
    hub = (fs::path(home ? home : "/") / ".cache" / "huggingface" / "hub").string();
  }
  std::string folder = "models--" + name;
  for (size_t p = folder.find('/'); p != std::string::npos; p = folder.find('/')) folder.replace(p, 1, "--");
  const fs::path repo = fs::path(hub) / folder;
  const fs::path snapshots = repo / "snapshots";
  const std::string fix = "download it once where there is network (huggingface-cli download " + name +
                          ") and copy the cache here, or set model.path to a folder with config.json, "
                          "model.safetensors and vocab.txt";
  if (!fs::is_directory(snapshots))
    throw Error("model.name: " + name, "not found in the Hugging Face cache (looked in " + snapshots.string() + ")", fix);
  std::ifstream ref(repo / "refs" / "main");
  std::string revision;
  if (ref && std::getline(ref, revision) && !revision.empty()) {
    const fs::path snap = snapshots / revision;
    if (fs::is_directory(snap)) return snap.string();
    throw Error("model.name: " + name, "refs/main names snapshot " + revision + ", which is missing from " + snapshots.string(), fix);
  }
  // No refs/main: accept a single snapshot, refuse to guess among several.
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(snapshots))
    if (e.is_directory()) found.push_back(e.path());
  if (found.size() == 1) return found[0].string();
  throw Error("model.name: " + name,
              found.empty() ? "no snapshot in " + snapshots.string()
                            : "several snapshots in " + snapshots.string() + " and no refs/main to choose one",
              fix);
}

std::string model_dir(const Config& c) {
  if (!c.model.path.empty()) return c.model.path;
  if (!c.model.name.empty()) return resolve_hf_cache(c.model.name);
  return {};
}

std::string vocab_path(const Config& c) {
  if (!c.model.vocab.empty()) return c.model.vocab;
  const std::string dir = model_dir(c);
  const fs::path txt = ModelFolder(dir).file(ModelFolder::kVocabTxt);
  std::error_code ec;
  if (dir.empty() || (fs::exists(txt, ec) && family_tokenizer_kind(c) != TokenizerKind::ByteLevelBpe)) return txt.string();
  return dir;  // its files, chosen by find_tokenizer_files with the family
}

std::optional<TokenizerKind> family_tokenizer_kind(const Config& c) {
  if (!c.model.vocab.empty()) return std::nullopt;
  return folder_tokenizer_kind(model_dir(c));
}

std::optional<TokenizerKind> folder_tokenizer_kind(const std::string& dir) {
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec) || !fs::exists(ModelFolder(dir).config(), ec)) return std::nullopt;
  try {
    return family_spec(ModelConfig::load(ModelFolder(dir).config()).family).byte_level_bpe ? TokenizerKind::ByteLevelBpe
                                                                                           : TokenizerKind::WordPiece;
  } catch (const Error&) { return std::nullopt; }  // a config.json ctxsim does not read: the job's own check says why
}

namespace {

// The tokenizer files of the config, an Error naming model.vocab when there are none.
TokenizerFiles config_tokenizer_files(const Config& c) {
  try {
    return find_tokenizer_files(vocab_path(c), family_tokenizer_kind(c));
  } catch (const Error& e) {
    if (!c.model.vocab.empty()) throw Error(c.where("model.vocab"), e.problem(), e.fix());
    throw Error(c.where("model.vocab"), "no tokenizer in the model folder " + model_dir(c) + " (" + e.problem() + ")",
                "add the model's vocab.txt (or vocab.json + merges.txt) there, or set model.vocab");
  }
}

}  // namespace

std::string vocab_text(const Config& c) {
  const TokenizerFiles f = config_tokenizer_files(c);
  if (f.kind == TokenizerKind::WordPiece && !f.wordpiece_json())
    return read_file_bytes(f.vocab, kMaxVocabBytes, "the vocabulary", "check model.vocab");
  if (f.kind == TokenizerKind::WordPiece) return f.wordpiece_vocab().lines();
  return load_bpe_model(f)->vocab.lines();
}

std::string tokenizer_sha256(const Config& c) {
  if (c.model.vocab.empty()) return {};
  const TokenizerFiles f = config_tokenizer_files(c);
  return f.kind == TokenizerKind::ByteLevelBpe ? load_bpe_model(f)->sha256() : std::string();
}

std::string model_config_sha256(const std::string& dir) {
  std::string text;
  const auto add = [&](const char* name, bool absent_too, size_t max_bytes = kMaxJsonBytes) {
    const fs::path p = fs::path(dir) / name;
    std::error_code ec;
    const bool there = fs::exists(p, ec);
    if (!there && !absent_too) return;
    const std::string bytes = there ? read_file_bytes(p.string(), max_bytes, name, "check the model folder") : "(absent)";
    text += std::string(name) + "\n" + std::to_string(bytes.size()) + "\n" + bytes + "\n";
  };
  add(ModelFolder::kConfig, true);
  add(ModelFolder::kTokenizerConfig, true);
  // A byte-level BPE folder's merges (never in a WordPiece folder, whose digest stays as it was).
  std::error_code ec;
  const ModelFolder folder(dir);
  if (folder.has(ModelFolder::kMerges))
    add(ModelFolder::kMerges, false, 2 * kMaxVocabBytes);
  else if (!folder.has(ModelFolder::kVocabTxt) || folder_tokenizer_kind(dir) == TokenizerKind::ByteLevelBpe)
    add(ModelFolder::kTokenizerJson, false, 2 * kMaxVocabBytes);  // Llama 3's is 9 MB
  return sha256_bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

InputDigests input_digests(const Config& c) {
  InputDigests d;
  const std::string dir = model_dir(c);
  if (!dir.empty()) {
    d.model = ModelFolder(dir).weights_sha256();
    d.model_config = model_config_sha256(dir);
  }
  const std::string vocab = vocab_text(c);
  d.vocab = sha256_bytes(reinterpret_cast<const uint8_t*>(vocab.data()), vocab.size());
  d.tokenizer = tokenizer_sha256(c);
  d.corpus = read_corpus(corpus_options(c)).sha256;
  return d;
}

std::vector<std::string> changed_inputs(const InputDigests& recorded, const InputDigests& now, const Config& c) {
  std::vector<std::string> changed;
  const auto compare = [&](const std::string& a, const std::string& b, const std::string& what) {
    if (!a.empty() && a != b) changed.push_back(what + " (sha256 " + a.substr(0, 12) + "… then, " + b.substr(0, 12) + "… now)");
  };
  compare(recorded.model, now.model, "the model's weights (" + ModelFolder(model_dir(c)).weights() + ")");
  compare(recorded.model_config, now.model_config, "the model's config.json or tokenizer_config.json (in " + model_dir(c) + ")");
  compare(recorded.vocab, now.vocab, "the vocabulary (" + vocab_path(c) + ")");
  compare(recorded.tokenizer, now.tokenizer, "the vocabulary's merges (" + vocab_path(c) + ")");
  compare(recorded.corpus, now.corpus, "the corpus (" + c.corpus.path + ")");
  if (!now.scores.empty()) compare(recorded.scores, now.scores, "the scores of prune.scores_from (" + c.prune.scores_from + ")");
  return changed;
}

const FamilySpec& model_family(const Config& c) {
  const std::string dir = model_dir(c);
  const fs::path config = ModelFolder(dir).config();
  std::error_code ec;
  // A job without a model folder (pretrain) makes the family pretrain.family names.
  if (dir.empty()) return family_spec(parse_family(c.pretrain.family, c.where("pretrain.family")));
  if (ModelFolder(dir).is_gguf()) return family_spec(model_config_of(dir).family);
  if (!fs::exists(config, ec)) return family_spec(Family{});
  return family_spec(ModelConfig::load(config.string()).family);
}

namespace {

// The Llama lineage's frame from its begin, pad and end tokens (each nullptr when absent):
// padding is the pad token, else the end token, else the family's; the three are specials.
FrameTokens lineage_frame(const FamilySpec& f, const char* begin, const char* pad, const char* eos) {
  FrameTokens t = f.frame;
  t.begin = begin;
  t.pad = pad ? pad : eos ? eos : f.frame.pad;
  for (const char* token : {begin, pad, eos})
    if (token) t.specials.emplace_back(token);
  return t;
}

// A GGUF file's frame (SPEC §7) from its special tokens (gguf_specials): the begin token when it
// adds one, padding, else the end token.
FrameTokens gguf_frame_tokens(const FamilySpec& f, const std::string& path, std::vector<std::string>& kept) {
  const GgufFile file(path);
  const GgufSpecials s = gguf_specials(file.header(), path);
  const auto keep = [&](const std::string& token) -> const char* {
    if (token.empty()) return nullptr;
    kept.push_back(token);
    return kept.back().c_str();
  };
  const char* begin = keep(s.begin);
  const char* pad = keep(s.pad);
  return lineage_frame(f, begin, pad, keep(s.end));
}

// The family's frame tokens; for the Llama lineage, its begin and pad tokens from the
// tokenizer_config.json beside the tokenizer's files (SPEC §7): bos_token (none when null or
// absent), pad_token or else eos_token, each a string or {"content": …}. The tokens read are
// kept in `kept` (cleared), which the returned pointers name.
FrameTokens frame_tokens(const FamilySpec& f, const TokenizerFiles& files, std::vector<std::string>& kept) {
  if (!f.frame_from_tokenizer_config) return f.frame;
  kept.clear();
  kept.reserve(3);  // no reallocation below: the pointers stay valid
  if (files.gguf()) return gguf_frame_tokens(f, files.vocab, kept);
  const std::string path = (fs::path(files.vocab).parent_path() / ModelFolder::kTokenizerConfig).string();
  nlohmann::json j = nlohmann::json::object();
  std::error_code ec;
  if (fs::exists(path, ec)) {
    try {
      j = nlohmann::json::parse(read_file_bytes(path, kMaxJsonBytes, "the tokenizer options", "check the model folder"));
    } catch (const nlohmann::json::exception& e) {
      throw Error(path, std::string("malformed JSON: ") + e.what(), "restore the model's tokenizer_config.json");
    }
  }
  const auto token = [&](const char* key) -> const char* {
    const auto it = j.is_object() ? j.find(key) : j.end();
    if (it == j.end() || it->is_null()) return nullptr;
    const nlohmann::json& v = it->is_object() && it->contains("content") ? (*it)["content"] : *it;
    if (!v.is_string() || v.get<std::string>().empty())
      throw Error(path + ": " + key, "expected a token (a string, or {\"content\": …}), got " + it->dump().substr(0, 80),
                  "restore the model's tokenizer_config.json");
    kept.push_back(v.get<std::string>());
    return kept.back().c_str();
  };
  const char* begin = token("bos_token");
  const char* pad = token("pad_token");
  return lineage_frame(f, begin, pad, token("eos_token"));
}

}  // namespace

JobTokenizer make_tokenizer(const Config& c) {
  const std::string dir = model_dir(c);
  JobTokenizer t;
  t.family = &model_family(c);
  const TokenizerFiles files = config_tokenizer_files(c);
  if ((files.kind == TokenizerKind::ByteLevelBpe) != t.family->byte_level_bpe)
    throw Error(c.where("model.vocab"),
                std::string("the model is ") + t.family->display + ", whose tokenizer is " +
                    (t.family->byte_level_bpe ? "byte-level BPE" : "WordPiece") + ", but " + vocab_path(c) + " is " +
                    (files.kind == TokenizerKind::ByteLevelBpe ? "byte-level BPE" : "a WordPiece vocab.txt"),
                "give the tokenizer files that belong to the model (its own folder's, or set model.vocab to them)");
  if (files.wordpiece_json()) {
    // The file's own normalizer says how it lower-cases; model.do_lower_case may override it.
    WordPieceJson j = load_wordpiece_tokenizer_json(files.vocab);
    if (c.model.do_lower_case != LowerCase::Auto) j.options.lower_case = j.options.strip_accents = c.model.do_lower_case == LowerCase::True;
    t.tokenizer = std::make_unique<BertTokenizer>(std::move(j.vocab), j.options);
  } else if (files.kind == TokenizerKind::WordPiece) {
    TokenizerOptions options;
    if (c.model.do_lower_case == LowerCase::Auto) {
      options = dir.empty() ? TokenizerOptions{} : read_tokenizer_options(dir, true);
    } else {
      options.lower_case = options.strip_accents = c.model.do_lower_case == LowerCase::True;
    }
    t.tokenizer = std::make_unique<BertTokenizer>(Vocab::load(files.vocab), options);
  } else {
    t.tokenizer = std::make_unique<BpeTokenizer>(load_bpe_model(files));
  }
  std::vector<std::string> read;                                    // the tokens tokenizer_config.json names
  const FrameTokens tokens = frame_tokens(*t.family, files, read);  // its errors name tokenizer_config.json
  try {
    t.frame = SampleFrame::resolve(tokens, t.vocab(), t.family->byte_level_bpe, t.family->display);
  } catch (const Error& e) { throw Error(c.where("model.vocab") + ": " + vocab_path(c), e.problem(), e.fix()); }
  return t;
}

void check_vocab_fits(const Config& c, const Vocab& vocab, int64_t model_vocab_size) {
  if (vocab.size() > model_vocab_size)
    throw Error(c.where("model.vocab"),
                "the vocabulary (" + vocab_path(c) + ") has " + std::to_string(vocab.size()) + " tokens but the model's vocab_size is " +
                    std::to_string(model_vocab_size),
                "use the vocab.txt that belongs to the model");
}

CorpusOptions corpus_options(const Config& c) {
  CorpusOptions o;
  o.format = c.corpus.format;
  o.path = c.corpus.path;
  o.text_field = c.corpus.text_field;
  o.invalid_utf8 = c.corpus.invalid_utf8;
  o.max_documents = c.corpus.max_documents;
  return o;
}

SampleOptions sample_options(const Config& c) {
  SampleOptions o;
  o.seq_len = static_cast<int32_t>(c.samples.seq_len);
  o.windows = c.samples.windows;
  o.stride_sentences = static_cast<int32_t>(c.samples.stride_sentences);
  o.num_samples = c.samples.num_samples;
  o.seed = static_cast<uint64_t>(c.samples.seed);
  o.documents = {c.corpus.split, c.corpus.heldout_every};
  return o;
}

namespace {

// Special tokens written literally in the corpus's text ("[SEP]", "<s>", "<|endoftext|>"): they keep
// their ids, as Hugging Face's tokenizers do (SPEC §1, §7), which the user should know once per corpus. Validity is
// by position, so a literal [PAD] is never taken for padding.
std::string literal_specials_note(const Corpus& corpus, const JobTokenizer& tokenizer) {
  std::vector<std::pair<std::string, int64_t>> counts;
  for (int32_t id : tokenizer.frame.specials) counts.emplace_back(std::string(tokenizer.vocab().token(id)), 0);
  std::string first;
  for (const auto& d : corpus.documents)
    for (size_t s = 0; s < d.sentences.size(); ++s)
      for (auto& [token, n] : counts)
        for (size_t at = d.sentences[s].find(token); at != std::string::npos; at = d.sentences[s].find(token, at + token.size())) {
          if (first.empty()) first = d.name + ", sentence " + std::to_string(s);
          ++n;
        }
  std::string found;
  for (const auto& [token, n] : counts)
    if (n > 0) found += (found.empty() ? "" : ", ") + token + " x" + std::to_string(n);
  if (found.empty()) return "";
  return "the text holds special tokens written out (" + found + "; the first in " + first + "): they keep their ids, as Hugging Face's " +
         "tokenizers give them, and a literal " + std::string(tokenizer.vocab().token(tokenizer.frame.pad)) + " is not padding";
}

// The config's corpus, its notes said in the log.
Corpus read_config_corpus(const Config& config, const JobTokenizer& tokenizer) {
  Corpus corpus = read_corpus(corpus_options(config));
  if (const std::string notes = corpus.notes.describe(); !notes.empty()) log_info("corpus " + config.corpus.path + ": " + notes);
  if (const std::string note = literal_specials_note(corpus, tokenizer); !note.empty())
    log_info("warning: corpus " + config.corpus.path + ": " + note);
  return corpus;
}

}  // namespace

TokenizedInputs read_and_tokenize(const Config& config, JobTokenizer& tokenizer) {
  TokenizedInputs t;
  const Corpus corpus = read_config_corpus(config, tokenizer);
  t.corpus_sha256 = corpus.sha256;
  t.corpus = tokenize_corpus(corpus, *tokenizer, tokenizer.frame);
  return t;
}

void check_positions(const Config& c, int64_t max_positions) {
  if (const std::string problem = positions_problem(c.samples.seq_len, max_positions); !problem.empty())
    throw Error(c.where("samples.seq_len"), problem, "lower samples.seq_len to at most " + std::to_string(max_positions));
}

void rethrow_at_key(const Config& c, const Error& e) {
  // The quantities the stages name, and the key that sets each.
  static const std::pair<std::string, const char*> keys[] = {
      {kSeqLen.quantity, "samples.seq_len"}, {kDocumentSplit, "corpus.split"}, {kCorpusText, "corpus.path"}};
  for (const auto& [quantity, key] : keys)
    if (e.where() == quantity) throw Error(c.where(key), e.problem(), e.fix());
  throw;
}

PreparedSamples prepare_samples(const Config& config, JobTokenizer& tokenizer, CorpusTokens tokens) {
  PreparedSamples p;
  const SampleOptions options = sample_options(config);
  const SampleFrame& frame = tokenizer.frame;
  if (tokens == CorpusTokens::Counted) {
    const TokenizedInputs inputs = read_and_tokenize(config, tokenizer);
    const TokenizedCorpus& tokenized = inputs.corpus;
    p.corpus_sha256 = inputs.corpus_sha256;
    p.documents = static_cast<int64_t>(tokenized.documents.size());
    p.sentences = tokenized.num_sentences;
    p.corpus_tokens = tokenized.num_tokens;
    p.dropped_sentences = tokenized.dropped_sentences;
    p.samples = at_config_keys(config, [&] { return build_samples(tokenized, options, frame); });
  } else {
    const Corpus corpus = read_config_corpus(config, tokenizer);
    const SentenceIndex index = index_sentences(corpus, *tokenizer, frame);
    p.corpus_sha256 = corpus.sha256;
    p.documents = static_cast<int64_t>(corpus.documents.size());
    p.sentences = index.sentences;
    p.dropped_sentences = index.dropped;
    p.samples = at_config_keys(config, [&] { return draw_samples(corpus, index, *tokenizer, options, frame); });
  }
  if (p.samples.shortfall() > 0)
    log_info("samples.num_samples=" + std::to_string(config.samples.num_samples) + " but the corpus has only " +
             std::to_string(p.samples.num_candidates) + " candidate windows: using all of them (shortfall " +
             std::to_string(p.samples.shortfall()) + ")");
  return p;
}

StatisticsOptions statistics_options(const Config& c, const JobTokenizer& tokenizer) {
  StatisticsOptions opt;
  opt.rules = c.selection;
  opt.attention_threshold = c.statistics.attention_threshold;
  const Vocab& vocab = tokenizer.vocab();
  const SampleFrame& frame = tokenizer.frame;
  // BERT's spellings of the frame's roles, which name the family's own tokens in any family.
  const std::pair<const char*, int32_t> roles[] = {{"[CLS]", frame.begin}, {"[SEP]", frame.end}, {"[PAD]", frame.pad}};
  std::vector<std::string> left_out;
  const std::string space = tokenizer.family->byte_level_bpe ? "\xC4\xA0" : "";
  const auto separator_ids = [&](const std::vector<std::string>& tokens, const std::string& key) {
    std::vector<int64_t> ids;
    for (const auto& s : tokens) {
      int32_t id = vocab.id(s);
      bool role = false;
      for (const auto& [name, role_id] : roles)
        if (id < 0 && s == name) id = role_id, role = true;
      if (role && id < 0) {
        if (std::find(left_out.begin(), left_out.end(), s) == left_out.end()) left_out.push_back(s);
        continue;
      }
      if (id < 0)
        throw Error(c.where(key), "'" + s + "' is not a token of the vocabulary",
                    "list separators as they are spelled in the vocabulary, e.g. \".\" \",\" \"[SEP]\"");
      ids.push_back(id);
      // Byte-level BPE spells a token after a space with U+0120 ("Ġ,"): "," names both.
      if (const int32_t spaced = vocab.id(space + s); !role && !space.empty() && s.rfind(space, 0) != 0 && spaced >= 0)
        ids.push_back(spaced);
    }
    if (ids.empty() && !tokens.empty())
      throw Error(c.where(key), "none of its separators is a token of a " + std::string(tokenizer.family->display) + " sample",
                  "list separators as they are spelled in the vocabulary, e.g. \".\" \",\"");
    return ids;
  };
  opt.separator_ids = separator_ids(c.statistics.separators, "statistics.separators");
  for (const auto& r : c.selection) opt.rule_separator_ids.push_back(separator_ids(r.separators, "selection"));
  for (const auto& s : left_out)
    log_info("note: " + s + " is left out of the separators: " + tokenizer.family->display + " samples have no such token (SPEC §7)");
  opt.special_ids.assign(frame.specials.begin(), frame.specials.end());
  return opt;
}

}  // namespace ctxsim
