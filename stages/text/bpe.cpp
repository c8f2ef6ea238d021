#define PCRE2_CODE_UNIT_WIDTH 8
#include "stages/text/bpe.h"

#include <pcre2.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <tuple>

#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/text/tokenizer_json.h"
#include "stages/text/utf8.h"

namespace ctxsim {

// ------------------------------------------------------------------ bytes to unicode ------
// GPT-2's table: the printable Latin-1 bytes spell themselves; the other 68 (controls, space,
// DEL, NBSP, soft hyphen) take the code points 256, 257, … in byte order.
char32_t byte_to_unicode(uint8_t b) {
  static const auto table = [] {
    std::array<char32_t, 256> t{};
    const auto printable = [](int c) { return (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF); };
    char32_t next = 256;
    for (int c = 0; c < 256; ++c) t[size_t(c)] = printable(c) ? char32_t(c) : next++;
    return t;
  }();
  return table[b];
}

namespace {

constexpr const char* kVocabFix = "give the model's vocab.json and merges.txt (GPT-2's: scripts/fetch_data.sh writes data/vocab/gpt2)";
constexpr size_t kMaxMergesBytes = size_t(64) << 20;
// Sentencepiece's word boundary, ▁ (U+2581), in UTF-8.
const std::string kMetaspace = "\xe2\x96\x81";

// Whether the ▁ at byte `at` of s follows another character than ▁: where a sentencepiece word
// starts (a run of ▁ belongs to the word after it).
bool starts_word(std::string_view s, size_t at) {
  return at > 0 && (at < kMetaspace.size() || s.compare(at - kMetaspace.size(), kMetaspace.size(), kMetaspace) != 0);
}

// A merge written "a b" (a tokenizer.json of tokenizers < 0.20, a GGUF): its two parts, or an
// Error naming `where`.
std::pair<std::string, std::string> merge_parts(const std::string& s, const std::string& where) {
  const size_t space = s.find(' ');
  if (space == std::string::npos || space == 0 || space + 1 >= s.size() || s.find(' ', space + 1) != std::string::npos)
    throw Error(where, "expected two tokens separated by one space", kVocabFix);
  return {s.substr(0, space), s.substr(space + 1)};
}

// One merge: the ids of its parts and result, or an Error naming `where`.
void add_merge(BpeModel& m, const std::string& left, const std::string& right, int32_t rank, const std::string& where) {
  const int32_t a = m.vocab.id(left), b = m.vocab.id(right), ab = m.vocab.id(left + right);
  for (const auto& [id, token] : {std::pair{a, &left}, {b, &right}})
    if (id < 0) throw Error(where, "the merge's part '" + utf8::replace_invalid(*token) + "' is not a token of the vocabulary", kVocabFix);
  if (ab < 0)
    throw Error(where, "the merge gives '" + utf8::replace_invalid(left + right) + "', which is not a token of the vocabulary",
                "the vocabulary and the merges do not belong together: " + std::string(kVocabFix));
  // A pair merged twice keeps its first (lowest) rank, as Hugging Face's and OpenAI's readers do.
  m.merges.emplace((uint64_t(uint32_t(a)) << 32) | uint32_t(b), std::pair{rank, ab});
}

// What a byte without its single-symbol token becomes.
enum class MissingByte { Error, Unknown, Dropped };
// Each byte's single-symbol token. vocab.json + merges.txt must have all 256 (else it is not a
// byte-level BPE); a tokenizer.json may lack some, which become its unk_token, or are dropped
// without one, as the tokenizers library does; a GGUF's are dropped, as llama.cpp does
// (SmolLM2 has no token for the control bytes). A dropped byte's id is -1.
void index_bytes(BpeModel& m, const std::string& name, MissingByte missing = MissingByte::Error, int32_t unknown = -1) {
  for (int b = 0; b < 256; ++b) {
    std::string s;
    utf8::append(s, byte_to_unicode(uint8_t(b)));
    m.byte_ids[b] = m.vocab.id(s);
    if (m.byte_ids[b] < 0 && missing == MissingByte::Unknown) m.byte_ids[b] = unknown;
    if (m.byte_ids[b] < 0 && missing == MissingByte::Error)
      throw Error(name, "no token for the byte " + std::to_string(b) + " ('" + s + "'): not a byte-level BPE vocabulary", kVocabFix);
  }
}

// Rust's char::is_whitespace (the White_Space property), which the tokenizers library's lstrip and
// rstrip take.
bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// A tokenizer.json's regex compiles (PCRE2, UTF and Unicode properties), or an Error naming it.
void check_regex(const std::string& regex, const std::string& where) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(regex.data()), regex.size(), PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw Error(where, "does not compile at character " + std::to_string(offset) + ": " + reinterpret_cast<const char*>(message),
                "give the model's own tokenizer.json");
  }
  pcre2_code_free(code);
}

void sort_added(BpeModel& m) {
  std::stable_sort(m.added.begin(), m.added.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
}

// vocab.json + merges.txt carry no added tokens: those that transformers' tokenizer classes add
// for these files (5.x: none strips whitespace), RoBERTa's when the vocabulary has <s> and </s>,
// else GPT-2's <|endoftext|>. A tokenizer.json lists its own.
void add_default_specials(BpeModel& m) {
  const bool roberta = m.vocab.id("<s>") >= 0 && m.vocab.id("</s>") >= 0;
  const std::vector<const char*> names =
      roberta ? std::vector<const char*>{"<s>", "<pad>", "</s>", "<unk>", "<mask>"} : std::vector<const char*>{"<|endoftext|>"};
  for (const char* name : names)
    if (const int32_t id = m.vocab.id(name); id >= 0) m.added.push_back({name, id, false, false});
  sort_added(m);
}

nlohmann::json parse_json(const std::string& text, const std::string& name) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) { throw Error(name, std::string("not valid JSON: ") + e.what(), kVocabFix); }
}

}  // namespace

std::string BpeModel::sha256() const {
  Sha256 h;
  h.update_field(vocab.lines());
  // The merges by rank: (rank, left, right, result) each.
  std::vector<std::array<int32_t, 4>> by_rank;
  by_rank.reserve(merges.size());
  for (const auto& [pair, m] : merges) by_rank.push_back({m.first, int32_t(pair >> 32), int32_t(pair & 0xffffffffu), m.second});
  std::sort(by_rank.begin(), by_rank.end());
  h.update_field("merges").update(by_rank.data(), by_rank.size() * sizeof(by_rank[0]));
  for (const AddedToken& a : added) {
    const int32_t flags[3] = {a.id, a.lstrip, a.rstrip};
    h.update_field(a.content).update(flags, sizeof flags);
  }
  h.update_field(pattern);
  for (const std::string& s : splits) h.update_field(s);
  const int32_t options[] = {ignore_merges, nfc, metaspace, int32_t(prepend), prepend_unless_there, split_at_metaspace, unk_id, fuse_unk};
  h.update_field("options").update(options, sizeof options).update(byte_ids, sizeof byte_ids).update(fallback_ids, sizeof fallback_ids);
  return h.hex();
}

std::shared_ptr<const BpeModel> BpeModel::parse(const std::string& vocab_json, const std::string& vocab_name, const std::string& merges_txt,
                                                const std::string& merges_name) {
  auto m = std::make_shared<BpeModel>();
  m->source = vocab_name + " + " + merges_name;
  m->vocab = vocab_from_json(parse_json(vocab_json, vocab_name), vocab_name, kVocabFix);
  index_bytes(*m, vocab_name);
  const size_t bad = utf8::find_invalid(merges_txt);
  if (bad != utf8::npos) throw Error(merges_name, "invalid UTF-8 at " + utf8::describe_offset(merges_txt, bad), kVocabFix);
  if (utf8::starts_with_bom(merges_txt))
    throw Error(merges_name, "starts with a UTF-8 byte-order mark before its '#version' line", utf8::kBomFix);
  const std::vector<std::string> lines = split_lines(merges_txt);
  if (lines.empty() || lines[0].rfind("#version", 0) != 0)
    throw Error(merges_name + ":1", "a merges file starts with its '#version: 0.2' line", kVocabFix);
  int32_t rank = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.empty()) continue;  // the trailing newline
    const std::string where = merges_name + ":" + std::to_string(i + 1);
    const size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 >= line.size() || line.find(' ', space + 1) != std::string::npos)
      throw Error(where, "expected two tokens separated by one space, got '" + line.substr(0, 80) + "'", kVocabFix);
    add_merge(*m, line.substr(0, space), line.substr(space + 1), rank++, where);
  }
  add_default_specials(*m);
  return m;
}

std::shared_ptr<const BpeModel> BpeModel::load(const std::string& vocab_json, const std::string& merges_txt) {
  return parse(read_file_bytes(vocab_json, kMaxVocabBytes, "the vocabulary", kVocabFix), vocab_json,
               read_file_bytes(merges_txt, kMaxMergesBytes, "the merges", kVocabFix), merges_txt);
}

namespace {

// A tokenizer.json's pre-tokenizer: leading Isolated splits (Split regexes, Digits), then
// ByteLevel, whose use_regex ends them with GPT-2's pattern; without it the last split is the
// pattern. Anything else is an Error naming it.
void read_pre_tokenizer(const nlohmann::json& pre, const std::string& name, const std::string& fix_component, BpeModel& m) {
  const auto member = [](const nlohmann::json& o, const char* key) { return o.is_object() && o.contains(key) ? o[key] : nlohmann::json(); };
  const auto type_of = [&](const nlohmann::json& p) {
    return member(p, "type").is_string() ? member(p, "type").get<std::string>() : "(none)";
  };
  const nlohmann::json steps =
      type_of(pre) == "Sequence" && member(pre, "pretokenizers").is_array() ? member(pre, "pretokenizers") : nlohmann::json::array({pre});
  std::string kinds;
  for (const auto& p : steps) kinds += (kinds.empty() ? "" : ", ") + type_of(p);
  // Leading Isolated splits (Split regexes, Digits), then ByteLevel: with use_regex GPT-2's pattern
  // ends them, without it the last split does.
  const bool byte_level = !steps.empty() && type_of(steps.back()) == "ByteLevel";
  bool known = byte_level;
  for (size_t i = 0; known && i + 1 < steps.size(); ++i) {
    const nlohmann::json& p = steps[i];
    if (type_of(p) == "Digits") {
      m.splits.push_back(member(p, "individual_digits") == true ? "\\p{N}" : "\\p{N}+");
    } else if (type_of(p) == "Split" && member(p, "behavior") == "Isolated" && member(p, "invert") != true &&
               member(member(p, "pattern"), "Regex").is_string()) {
      m.splits.push_back(member(member(p, "pattern"), "Regex").get<std::string>());
      check_regex(m.splits.back(), name + ": pre_tokenizer.pretokenizers[" + std::to_string(i) + "].pattern.Regex");
    } else {
      known = false;
    }
  }
  if (known && member(steps.back(), "use_regex") == false) {
    known = !m.splits.empty();
    if (known) m.pattern = m.splits.back(), m.splits.pop_back();
  }
  if (!known)
    throw Error(name + ": pre_tokenizer",
                "is [" + kinds +
                    "]; ctxsim applies Split regexes (behavior Isolated) and Digits, then ByteLevel (its own regex, or "
                    "without use_regex after a Split)",
                fix_component);
}

// The Metaspace pre-tokenizer (Mistral v0.3's tokenizer.json, transformers' non-legacy Llama
// conversion): spaces become ▁, ▁ is prepended by its prepend_scheme (or the older
// add_prefix_space), and with split each ▁ begins a piece.
void read_metaspace(const nlohmann::json& pre, const std::string& name, const std::string& fix_component, BpeModel& m) {
  const auto member = [](const nlohmann::json& o, const char* key) { return o.is_object() && o.contains(key) ? o[key] : nlohmann::json(); };
  if (member(pre, "replacement") != kMetaspace)
    throw Error(name + ": pre_tokenizer.replacement", "is " + member(pre, "replacement").dump() + ", not ▁ (U+2581)", fix_component);
  const nlohmann::json scheme = member(pre, "prepend_scheme");
  if (scheme == "always" || (scheme.is_null() && member(pre, "add_prefix_space") != false))
    m.prepend = BpeModel::Prepend::Always;
  else if (scheme == "first")
    m.prepend = BpeModel::Prepend::First;
  else if (scheme == "never" || scheme.is_null())
    m.prepend = BpeModel::Prepend::Never;
  else
    throw Error(name + ": pre_tokenizer.prepend_scheme", "is " + scheme.dump() + "; the tokenizers library knows always, first and never",
                "give the model's own tokenizer.json");
  m.metaspace = true;
  m.prepend_unless_there = true;
  m.split_at_metaspace = member(pre, "split") != false;  // the library's default
}

// A tokenizer.json's added tokens: each a token of model.vocab, or the next id after it (which
// extends the vocabulary: Llama 3's 128000 …), with its flags.
void read_added_tokens(const nlohmann::json& added, const std::string& name, BpeModel& m) {
  const auto member = [](const nlohmann::json& o, const char* key) { return o.is_object() && o.contains(key) ? o[key] : nlohmann::json(); };
  if (!added.is_null() && !added.is_array()) throw Error(name + ": added_tokens", "expected a list", kVocabFix);
  std::vector<std::string> extra;  // added tokens past model.vocab, ids vocab.size() … in order
  const int32_t base = m.vocab.size();
  for (size_t i = 0; i < (added.is_array() ? added.size() : 0); ++i) {
    const std::string where = name + ": added_tokens[" + std::to_string(i) + "]";
    const nlohmann::json& e = added[i];
    const nlohmann::json content = member(e, "content"), id = member(e, "id");
    if (!content.is_string() || content.get<std::string>().empty() || !id.is_number_integer())
      throw Error(where, "needs a non-empty content and an integer id", kVocabFix);
    const std::string text = content.get<std::string>();
    const int64_t n = id.get<int64_t>();
    if (n == int64_t(base) + int64_t(extra.size()) && n < (int64_t(1) << 22)) {
      extra.push_back(text);  // the vocabulary's next id
    } else if (n < 0 || n >= base || m.vocab.token(int32_t(n)) != text) {
      throw Error(where,
                  "'" + utf8::replace_invalid(text.substr(0, 64)) + "' with id " + id.dump() +
                      " is neither that token of model.vocab nor the next id after it (" + std::to_string(base + int64_t(extra.size())) +
                      ")",
                  "give the model's own tokenizer.json");
    }
    if (member(e, "single_word") == true)
      throw Error(where, "'" + utf8::replace_invalid(text.substr(0, 64)) + "' matches single words only, which ctxsim does not implement",
                  "give a tokenizer.json without single_word added tokens");
    m.added.push_back({text, int32_t(n), member(e, "lstrip") == true, member(e, "rstrip") == true});
  }
  if (!extra.empty()) {
    std::vector<std::string> tokens;
    tokens.reserve(size_t(base) + extra.size());
    for (int32_t id = 0; id < base; ++id) tokens.emplace_back(m.vocab.token(id));
    tokens.insert(tokens.end(), extra.begin(), extra.end());
    m.vocab = Vocab::from_tokens(tokens);
  }
}

}  // namespace

std::shared_ptr<const BpeModel> BpeModel::parse_tokenizer_json(const std::string& text, const std::string& name) {
  const nlohmann::json j = parse_json(text, name);
  const auto member = [](const nlohmann::json& o, const char* key) { return o.is_object() && o.contains(key) ? o[key] : nlohmann::json(); };
  const nlohmann::json model = member(j, "model");
  const std::string type = member(model, "type").is_string() ? member(model, "type").get<std::string>() : std::string("(none)");
  if (type != "BPE")
    throw Error(name + ": model.type",
                "is " + type + "; ctxsim reads a tokenizer.json of byte-level BPE (GPT-2, RoBERTa) or WordPiece (BERT)",
                "give the model's own tokenizer files; other tokenizer models are not supported");
  auto m = std::make_shared<BpeModel>();
  m->source = name;
  const std::string fix_component =
      "give a tokenizer.json of byte-level BPE (GPT-2, RoBERTa, Llama 3, Qwen) or Llama 2's sentencepiece-style BPE; other components "
      "are not implemented";
  check_post_processor(j, name, fix_component);
  // The normalizer: none, NFC (Qwen), or Llama 2's Prepend ▁ and Replace " " by ▁ (with no
  // pre-tokenizer: sentencepiece-style BPE over characters).
  const nlohmann::json norm = member(j, "normalizer");
  const nlohmann::json steps = member(norm, "normalizers");
  const auto is = [&](const nlohmann::json& n, const char* type) { return member(n, "type") == type; };
  m->metaspace = is(norm, "Sequence") && steps.is_array() && steps.size() == 2 && is(steps[0], "Prepend") &&
                 member(steps[0], "prepend") == kMetaspace && is(steps[1], "Replace") &&
                 member(member(steps[1], "pattern"), "String") == " " && member(steps[1], "content") == kMetaspace;
  if (!norm.is_null() && !m->metaspace) {
    if (!is(norm, "NFC"))
      throw Error(name + ": normalizer", "is " + member(norm, "type").dump() + ", which ctxsim does not apply", fix_component);
    m->nfc = true;
  }
  if (m->metaspace && !member(j, "pre_tokenizer").is_null())
    throw Error(name + ": pre_tokenizer",
                "is " + member(member(j, "pre_tokenizer"), "type").dump() + " after Llama 2's normalizer, which has none", fix_component);
  if (!m->metaspace && !m->nfc && is(member(j, "pre_tokenizer"), "Metaspace"))
    read_metaspace(member(j, "pre_tokenizer"), name, fix_component, *m);
  else if (!m->metaspace)
    read_pre_tokenizer(member(j, "pre_tokenizer"), name, fix_component, *m);
  if (member(model, "byte_fallback") == true && !m->metaspace)
    throw Error(name + ": model.byte_fallback",
                "is true without a sentencepiece-style tokenizer (Llama 2's normalizer Prepend ▁, Replace ' ' by ▁, or a Metaspace "
                "pre-tokenizer)",
                fix_component);
  m->ignore_merges = member(model, "ignore_merges") == true;
  m->vocab = vocab_from_json(member(model, "vocab"), name + ": model.vocab", kVocabFix);
  const nlohmann::json unk = member(model, "unk_token");
  const int32_t unk_id = unk.is_string() ? m->vocab.id(unk.get<std::string>()) : -1;
  index_bytes(*m, name + ": model.vocab", unk_id >= 0 ? MissingByte::Unknown : MissingByte::Dropped, unk_id);
  m->unk_id = unk_id;
  m->fuse_unk = member(model, "fuse_unk") == true;
  if (m->metaspace) {
    m->metaspace_words = m->vocab.id(kMetaspace) >= 0;  // ▁ alone a token: no unknown or byte run crosses a word
    for (int32_t id = 0; id < m->vocab.size() && m->metaspace_words; ++id) {
      const std::string_view t = m->vocab.token(id);
      for (size_t at = t.find(kMetaspace, 1); at != std::string_view::npos && m->metaspace_words; at = t.find(kMetaspace, at + 1))
        if (starts_word(t, at)) m->metaspace_words = false;
    }
  }
  for (int b = 0; b < 256; ++b) {  // byte_fallback's tokens <0x00> … <0xFF>
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    m->fallback_ids[b] = member(model, "byte_fallback") == true ? m->vocab.id(hex) : -1;
  }
  const nlohmann::json merges = member(model, "merges");
  if (!merges.is_array()) throw Error(name + ": model.merges", "expected a list of merges", kVocabFix);
  int32_t rank = 0;
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string where = name + ": model.merges[" + std::to_string(i) + "]";
    const nlohmann::json& e = merges[i];
    std::string left, right;
    if (e.is_string()) {  // "a b" (tokenizers < 0.20)
      std::tie(left, right) = merge_parts(e.get<std::string>(), where);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {  // ["a", "b"]
      left = e[0].get<std::string>(), right = e[1].get<std::string>();
    } else {
      throw Error(where, "expected \"a b\" or [\"a\", \"b\"]", kVocabFix);
    }
    add_merge(*m, left, right, rank++, where);
  }
  read_added_tokens(member(j, "added_tokens"), name, *m);
  sort_added(*m);
  return m;
}

namespace {

// llama.cpp's pre-tokenizers by the name a GGUF gives (llama-vocab.cpp): the Isolated splits and
// the pattern ("" is GPT-2's), as the Hugging Face tokenizer.json of those models has them.
struct GgufPreTokenizer {
  const char* name;
  std::vector<std::string> splits;
  const char* pattern;
  bool ignore_merges = false;  // Llama 3's (llama.cpp sets it for llama-bpe; its tokenizer.json has it)
  bool nfc = false;            // Qwen's tokenizer.json normalizes to NFC
};
const std::vector<GgufPreTokenizer>& gguf_pre_tokenizers() {
  static const std::vector<GgufPreTokenizer> rows = {
      {"gpt2", {}, ""},
      {"gpt-2", {}, ""},
      {"smollm", {"\\p{N}"}, ""},  // Digits (individual), ByteLevel with GPT-2's regex
      {"llama-bpe",
       {},
       R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
       true},
      {"qwen2",
       {},
       R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
       false,
       true},
  };
  return rows;
}

}  // namespace

std::shared_ptr<const BpeModel> BpeModel::from_gguf(const GgufHeader& h, const std::string& path) {
  const std::string model = h.text("tokenizer.ggml.model", path);
  if (model != "gpt2")
    throw Error(path + ": tokenizer.ggml.model",
                "is '" + model + "'" + (model == "llama" ? " (sentencepiece: Llama 2, Mistral)" : "") +
                    "; ctxsim reads a GGUF's byte-level BPE vocabulary (gpt2: SmolLM, Llama 3, Qwen)",
                "use a model with a byte-level BPE tokenizer, or its Hugging Face folder");
  const GgufValue* tokens = h.find("tokenizer.ggml.tokens");
  const GgufValue* merges = h.find("tokenizer.ggml.merges");
  if (!tokens || !tokens->array_of_strings || tokens->strings.empty() || !merges || !merges->array_of_strings)
    throw Error(path, "has no tokenizer.ggml.tokens and tokenizer.ggml.merges (lists of strings)", "use a complete model file");
  // A GGUF without the key, or with "default", means llama.cpp's own default sequence of splits,
  // which is no Hugging Face tokenizer's: refused below with the names ctxsim knows.
  const std::string pre_name = h.find("tokenizer.ggml.pre") ? h.text("tokenizer.ggml.pre", path) : "default (no tokenizer.ggml.pre)";
  const GgufPreTokenizer* pre = nullptr;
  std::string known;
  for (const GgufPreTokenizer& p : gguf_pre_tokenizers()) {
    if (pre_name == p.name) pre = &p;
    known += (known.empty() ? "" : ", ") + std::string(p.name);
  }
  if (!pre)
    throw Error(path + ": tokenizer.ggml.pre", "is '" + pre_name + "', a pre-tokenizer ctxsim does not know (it knows " + known + ")",
                "use the model's Hugging Face folder (its tokenizer.json)");
  auto m = std::make_shared<BpeModel>();
  m->source = path;
  m->splits = pre->splits;
  m->pattern = pre->pattern;
  m->ignore_merges = pre->ignore_merges;
  m->nfc = pre->nfc;
  for (size_t i = 0; i < tokens->strings.size(); ++i)
    if (tokens->strings[i].find('\n') != std::string::npos)
      throw Error(path + ": tokenizer.ggml.tokens[" + std::to_string(i) + "]",
                  "holds a line break (U+000A), which a vocabulary line cannot hold",
                  "use a model file whose tokens spell a newline as byte-level BPE does (Ċ)");
  m->vocab = Vocab::from_tokens(tokens->strings);
  if (m->vocab.size() != int32_t(tokens->strings.size()))
    throw Error(path + ": tokenizer.ggml.tokens", "holds a token twice", "use a complete, unedited model file");
  index_bytes(*m, path + ": tokenizer.ggml.tokens", MissingByte::Dropped);
  int32_t rank = 0;
  for (size_t i = 0; i < merges->strings.size(); ++i) {
    const std::string where = path + ": tokenizer.ggml.merges[" + std::to_string(i) + "]";
    const auto [left, right] = merge_parts(merges->strings[i], where);
    add_merge(*m, left, right, rank++, where);
  }
  // Control (3) and user-defined (4) tokens are matched before the model, as llama.cpp and the
  // tokenizers library (added_tokens) match them.
  if (const GgufValue* types = h.find("tokenizer.ggml.token_type"); types && types->integers.size() == tokens->strings.size())
    for (size_t id = 0; id < types->integers.size(); ++id)
      if (types->integers[id] == 3 || types->integers[id] == 4) m->added.push_back({tokens->strings[id], int32_t(id), false, false});
  sort_added(*m);
  return m;
}

GgufSpecials gguf_specials(const GgufHeader& h, const std::string& path) {
  const GgufValue* tokens = h.find("tokenizer.ggml.tokens");
  const auto token = [&](const char* key) {
    const int64_t id = h.integer(key, path, -1);
    if (id < 0) return std::string();
    if (!tokens || id >= int64_t(tokens->strings.size()))
      throw Error(path + ": " + key, "is " + std::to_string(id) + ", not the id of a token of tokenizer.ggml.tokens",
                  "use a complete, unedited model file");
    return tokens->strings[size_t(id)];
  };
  const GgufValue* add_bos = h.find("tokenizer.ggml.add_bos_token");
  GgufSpecials s;
  if (add_bos && add_bos->kind == GgufValue::Kind::Bool && add_bos->flag) s.begin = token("tokenizer.ggml.bos_token_id");
  s.end = token("tokenizer.ggml.eos_token_id");
  s.pad = token("tokenizer.ggml.padding_token_id");
  return s;
}

std::string BpeModel::to_tokenizer_json() const {
  nlohmann::ordered_json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  nlohmann::ordered_json added = nlohmann::ordered_json::array();
  std::vector<AddedToken> by_id = this->added;
  std::sort(by_id.begin(), by_id.end(), [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  for (const AddedToken& a : by_id)
    added.push_back({{"id", a.id},
                     {"content", a.content},
                     {"single_word", false},
                     {"lstrip", a.lstrip},
                     {"rstrip", a.rstrip},
                     {"normalized", false},
                     {"special", true}});
  j["added_tokens"] = added;
  j["normalizer"] = nfc ? nlohmann::ordered_json{{"type", "NFC"}} : nlohmann::ordered_json();
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  const auto split = [](const std::string& regex) {
    return nlohmann::ordered_json{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}};
  };
  for (const std::string& s : splits) steps.push_back(split(s));
  if (!pattern.empty()) steps.push_back(split(pattern));
  steps.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", pattern.empty()}});
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", steps}};
  j["post_processor"] = nullptr;
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  nlohmann::ordered_json v = nlohmann::ordered_json::object();
  for (int32_t id = 0; id < vocab.size(); ++id) v[std::string(vocab.token(id))] = id;
  std::vector<std::pair<int32_t, uint64_t>> ranked;  // (rank, left << 32 | right)
  for (const auto& [pair, merged] : merges) ranked.emplace_back(merged.first, pair);
  std::sort(ranked.begin(), ranked.end());
  nlohmann::ordered_json m = nlohmann::ordered_json::array();
  for (const auto& [rank, pair] : ranked) m.push_back({vocab.token(int32_t(pair >> 32)), vocab.token(int32_t(pair & 0xffffffffu))});
  j["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", ignore_merges},
                {"vocab", v},
                {"merges", m}};
  return j.dump() + "\n";
}

std::shared_ptr<const BpeModel> BpeModel::load_tokenizer_json(const std::string& path) {
  return parse_tokenizer_json(read_file_bytes(path, kMaxVocabBytes + kMaxMergesBytes, "the tokenizer", kVocabFix), path);
}

// ------------------------------------------------------------------------- tokenizer ------

// The pre-tokenizer's pattern (GPT-2's, or the file's Split regex), JIT-compiled once per tokenizer.
struct BpeTokenizer::Pattern {
  pcre2_code* code = nullptr;
  pcre2_match_data* match = nullptr;
  explicit Pattern(const std::string& file_pattern) {
    static const char kGpt2[] = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
    const std::string pattern = file_pattern.empty() ? std::string(kGpt2) : file_pattern;
    int error = 0;
    PCRE2_SIZE offset = 0;
    code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    CTXSIM_CHECK(code, "the pre-tokenizer pattern does not compile (the parser compiled it)");
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // without JIT (some platforms) it still matches, slower
    match = pcre2_match_data_create_from_pattern(code, nullptr);
    CTXSIM_CHECK(match, "out of memory for PCRE2's match data");
  }
  ~Pattern() {
    pcre2_match_data_free(match);
    pcre2_code_free(code);
  }
  Pattern(const Pattern&) = delete;
  Pattern& operator=(const Pattern&) = delete;
};

BpeTokenizer::BpeTokenizer(std::shared_ptr<const BpeModel> model) : model_(std::move(model)) {
  CTXSIM_CHECK(model_, "a BPE tokenizer needs its model");
  for (const std::string& s : model_->splits) patterns_.push_back(std::make_unique<Pattern>(s));
  patterns_.push_back(std::make_unique<Pattern>(model_->pattern));
  for (const AddedToken& a : model_->added) added_first_[static_cast<unsigned char>(a.content[0])] = true;
}
BpeTokenizer::~BpeTokenizer() = default;
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;

namespace {
void check_utf8(std::string_view text) {
  const size_t bad = utf8::find_invalid(text);
  if (bad != utf8::npos) throw Error("text", "invalid UTF-8 at " + utf8::describe_offset(text, bad), "give UTF-8 text");
}
}  // namespace

template <class OnPiece>
void BpeTokenizer::for_each_piece(std::string_view text, OnPiece&& on_piece) {
  split_from(0, text, on_piece);
}

template <class OnPiece>
void BpeTokenizer::split_from(size_t level, std::string_view text, OnPiece&& on_piece) {
  if (level + 1 < patterns_.size()) {  // a split before the last pattern: each of its pieces goes on
    const auto next = [&](std::string_view piece) { split_from(level + 1, piece, on_piece); };
    const Pattern& p = *patterns_[level];
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t at = 0;
    while (at < text.size()) {
      const int rc = pcre2_match(p.code, subject, text.size(), at, PCRE2_NO_UTF_CHECK | PCRE2_NOTEMPTY, p.match, nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      CTXSIM_CHECK(rc > 0, "a pre-tokenizer split failed at byte " + std::to_string(at) + " (PCRE2 error " + std::to_string(rc) + ")");
      const PCRE2_SIZE* range = pcre2_get_ovector_pointer(p.match);
      if (range[0] > at) next(text.substr(at, range[0] - at));
      next(text.substr(range[0], range[1] - range[0]));
      at = range[1];
    }
    if (at < text.size()) next(text.substr(at));
    return;
  }
  const Pattern* pattern_ = patterns_.back().get();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t at = 0;
  while (at < text.size()) {
    // The Split behaviour Isolated: each match is a piece, and so is the text between matches
    // (none for these patterns, which match every character). Empty matches do not count.
    const int rc = pcre2_match(pattern_->code, subject, text.size(), at, PCRE2_NO_UTF_CHECK | PCRE2_NOTEMPTY, pattern_->match, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) {
      on_piece(text.substr(at));
      return;
    }
    CTXSIM_CHECK(rc > 0, "the pre-tokenizer pattern failed at byte " + std::to_string(at) + " (PCRE2 error " + std::to_string(rc) + ")");
    const PCRE2_SIZE* range = pcre2_get_ovector_pointer(pattern_->match);
    if (range[0] > at) on_piece(text.substr(at, range[0] - at));
    on_piece(text.substr(range[0], range[1] - range[0]));
    at = range[1];
  }
}

std::vector<std::string_view> BpeTokenizer::pieces(std::string_view text) {
  check_utf8(text);
  std::vector<std::string_view> out;
  for_each_piece(text, [&](std::string_view p) { out.push_back(p); });
  return out;
}

void BpeTokenizer::symbols(std::string_view piece, std::vector<int32_t>& w) const {
  w.clear();
  if (model_->metaspace) {  // characters; one without a token its bytes' <0xNN>, else <unk> (fused)
    for (size_t at = 0; at < piece.size();) {
      const size_t start = at;
      utf8::next(piece, at);
      const std::string_view ch = piece.substr(start, at - start);
      if (const int32_t id = model_->vocab.id(std::string(ch)); id >= 0) {
        w.push_back(id);
        continue;
      }
      bool bytes = true;
      for (unsigned char b : ch) bytes = bytes && model_->fallback_ids[b] >= 0;
      if (bytes) {
        for (unsigned char b : ch) w.push_back(model_->fallback_ids[b]);
      } else if (model_->unk_id >= 0 && (!model_->fuse_unk || w.empty() || w.back() != model_->unk_id)) {
        w.push_back(model_->unk_id);
      }
    }
    return;
  }
  if (model_->ignore_merges) {  // a piece that is a token stays whole, whatever the merges say
    std::string spelled;
    for (unsigned char b : piece) utf8::append(spelled, byte_to_unicode(b));
    if (const int32_t id = model_->vocab.id(spelled); id >= 0) w.push_back(id);
  }
  if (w.empty())
    for (unsigned char b : piece)
      if (model_->byte_ids[b] >= 0) w.push_back(model_->byte_ids[b]);  // a dropped byte (index_bytes) gives nothing
}

void BpeTokenizer::merge(std::string_view piece, std::vector<int32_t>& ids) {
  constexpr size_t kMaxCached = size_t(1) << 20;  // pieces; a bound on memory over any corpus
  const std::string key(piece);
  if (const auto it = cache_.find(key); it != cache_.end()) {
    ids.insert(ids.end(), it->second.begin(), it->second.end());
    return;
  }
  std::vector<int32_t>& w = work_;
  symbols(piece, w);
  // Merge the adjacent pair of lowest rank, every occurrence left to right, until none merges.
  while (w.size() > 1) {
    int32_t best = std::numeric_limits<int32_t>::max(), merged = -1;
    uint64_t best_pair = 0;
    for (size_t i = 0; i + 1 < w.size(); ++i) {
      const uint64_t pair = (uint64_t(uint32_t(w[i])) << 32) | uint32_t(w[i + 1]);
      const auto it = model_->merges.find(pair);
      if (it != model_->merges.end() && it->second.first < best) best = it->second.first, merged = it->second.second, best_pair = pair;
    }
    if (merged < 0) break;
    const int32_t left = int32_t(best_pair >> 32), right = int32_t(uint32_t(best_pair));
    size_t out = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      if (i + 1 < w.size() && w[i] == left && w[i + 1] == right) {
        w[out++] = merged;
        ++i;
      } else {
        w[out++] = w[i];
      }
    }
    w.resize(out);
  }
  if (cache_.size() >= kMaxCached) cache_.clear();
  cache_.emplace(key, w);
  ids.insert(ids.end(), w.begin(), w.end());
}

void BpeTokenizer::encode_segment(std::string_view raw, bool at_start, Encoding& out) {
  std::string normalised;
  std::string_view text = raw;
  if (model_->nfc) {  // the normalizer runs on the text between added tokens, as the library's does
    normalised = utf8::nfc(raw);
    text = normalised;
  }
  if (model_->metaspace) {  // " " replaced by ▁, ▁ prepended (BpeModel::prepend); a word starts at ▁
    for (char ch : raw) normalised += ch == ' ' ? kMetaspace : std::string(1, ch);
    using Prepend = BpeModel::Prepend;
    if ((model_->prepend == Prepend::Always || (model_->prepend == Prepend::First && at_start)) &&
        !(model_->prepend_unless_there && normalised.compare(0, kMetaspace.size(), kMetaspace) == 0))
      normalised.insert(0, kMetaspace);
    const size_t first = out.ids.size();
    const std::string_view all = normalised;
    if (model_->split_at_metaspace) {  // pieces from each ▁ on (the pre-tokenizer's split)
      size_t begin = 0;
      for (size_t at = all.find(kMetaspace, 1); at != std::string_view::npos; at = all.find(kMetaspace, at + 1))
        merge(all.substr(begin, at - begin), out.ids), begin = at;
      merge(all.substr(begin), out.ids);
    } else if (!model_->metaspace_words) {  // one piece
      merge(normalised, out.ids);
    } else {  // a word at a time: each ▁ run that follows another character starts one
      size_t begin = 0;
      for (size_t at = all.find(kMetaspace, 1); at != std::string_view::npos; at = all.find(kMetaspace, at + kMetaspace.size())) {
        if (!starts_word(all, at)) continue;  // inside a run of ▁
        merge(all.substr(begin, at - begin), out.ids);
        begin = at;
      }
      merge(all.substr(begin), out.ids);
    }
    for (size_t i = first; i < out.ids.size(); ++i) {
      if (i > first && model_->vocab.token(out.ids[i]).rfind(kMetaspace, 0) == 0) ++out.num_words;
      out.word_ids.push_back(out.num_words);
    }
    ++out.num_words;
    return;
  }
  bool any = false;
  for_each_piece(text, [&](std::string_view piece) {
    if (any && piece[0] == ' ') ++out.num_words;  // a word starts at a piece that starts with a space (SPEC §7)
    any = true;
    merge(piece, out.ids);  // every piece gives at least one token: each byte has one
    out.word_ids.resize(out.ids.size(), out.num_words);
  });
  if (any) ++out.num_words;
}

void BpeTokenizer::encode(std::string_view text, Encoding& out) {
  // Added tokens first, leftmost then longest, as the tokenizers library splits on them; each is a
  // word of its own, and the text between them is pre-tokenized and merged alone.
  check_utf8(text);
  const auto& added = model_->added;
  size_t seg = 0;
  for (size_t i = 0; i < text.size() && !added.empty(); ++i) {
    if (!added_first_[static_cast<unsigned char>(text[i])]) continue;
    const AddedToken* hit = nullptr;
    for (const AddedToken& a : added)
      if (text.compare(i, a.content.size(), a.content) == 0) {
        hit = &a;
        break;
      }
    if (!hit) continue;
    size_t before = i, after = i + hit->content.size();
    if (hit->lstrip)
      while (before > seg) {
        size_t at = before - 1;
        while (at > seg && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;  // to the character's first byte
        size_t next = at;
        if (!is_white_space(utf8::next(text, next))) break;
        before = at;
      }
    if (hit->rstrip)
      for (size_t next = after; next < text.size();) {
        if (!is_white_space(utf8::next(text, next))) break;
        after = next;
      }
    if (before > seg) encode_segment(text.substr(seg, before - seg), seg == 0, out);
    out.ids.push_back(hit->id);
    out.word_ids.push_back(out.num_words++);
    seg = after;
    i = after - 1;
  }
  if (seg < text.size()) encode_segment(text.substr(seg), seg == 0, out);
}

std::vector<std::string> BpeTokenizer::tokens(const std::vector<int32_t>& ids) const {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (int32_t id : ids) out.emplace_back(model_->vocab.token(id));
  return out;
}

std::string BpeTokenizer::decode(const int32_t* ids, size_t n) const {
  static const auto to_byte = [] {
    std::unordered_map<char32_t, uint8_t> m;
    for (int b = 0; b < 256; ++b) m.emplace(byte_to_unicode(uint8_t(b)), uint8_t(b));
    return m;
  }();
  std::string bytes;
  if (model_->metaspace) {  // tokens as they are, ▁ a space, <0xNN> its byte (Llama 2's decoder)
    for (size_t k = 0; k < n; ++k) {
      const std::string_view t = model_->vocab.token(ids[k]);
      unsigned byte = 0;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' &&
          std::sscanf(std::string(t.substr(3, 2)).c_str(), "%2x", &byte) == 1) {
        bytes += char(byte);
        continue;
      }
      for (size_t i = 0; i < t.size();)
        if (t.compare(i, kMetaspace.size(), kMetaspace) == 0) {
          bytes += ' ';
          i += kMetaspace.size();
        } else {
          bytes += t[i++];
        }
    }
    return utf8::replace_invalid(bytes);
  }
  for (size_t k = 0; k < n; ++k) {
    const std::string_view t = model_->vocab.token(ids[k]);
    for (size_t i = 0; i < t.size();) {
      const size_t at = i;
      const auto it = to_byte.find(utf8::next(t, i));
      if (it != to_byte.end())
        bytes += char(it->second);
      else
        bytes.append(t.substr(at, i - at));  // an added token's own characters (<s>, <|endoftext|> are ASCII)
    }
  }
  return utf8::replace_invalid(bytes);
}

}  // namespace ctxsim
