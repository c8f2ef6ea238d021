#define PCRE2_CODE_UNIT_WIDTH 8
#include "stages/text/bpe.h"

#include <pcre2.h>

#include <algorithm>
#include <array>
#include <limits>
#include <nlohmann/json.hpp>

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

void index_bytes(BpeModel& m, const std::string& name) {
  for (int b = 0; b < 256; ++b) {
    std::string s;
    utf8::append(s, byte_to_unicode(uint8_t(b)));
    m.byte_ids[b] = m.vocab.id(s);
    if (m.byte_ids[b] < 0)
      throw Error(name, "no token for the byte " + std::to_string(b) + " ('" + s + "'): not a byte-level BPE vocabulary", kVocabFix);
  }
}

// Rust's char::is_whitespace (the White_Space property), which the tokenizers library's lstrip and
// rstrip take.
bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
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

std::shared_ptr<const BpeModel> BpeModel::parse(const std::string& vocab_json, const std::string& vocab_name, const std::string& merges_txt,
                                                const std::string& merges_name) {
  auto m = std::make_shared<BpeModel>();
  m->source = vocab_name + " + " + merges_name;
  m->vocab = vocab_from_json(parse_json(vocab_json, vocab_name), vocab_name, kVocabFix);
  index_bytes(*m, vocab_name);
  const size_t bad = utf8::find_invalid(merges_txt);
  if (bad != utf8::npos) throw Error(merges_name, "invalid UTF-8 at " + utf8::describe_offset(merges_txt, bad), kVocabFix);
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
      "give a tokenizer.json of byte-level BPE (GPT-2, RoBERTa, Llama 3, Qwen); other components are not "
      "implemented";
  // The normalizer: none, or NFC (Qwen).
  const nlohmann::json norm = member(j, "normalizer");
  if (!norm.is_null()) {
    if (member(norm, "type") != "NFC")
      throw Error(name + ": normalizer", "is " + member(norm, "type").dump() + ", which ctxsim does not apply", fix_component);
    m->nfc = true;
  }
  // The pre-tokenizer: ByteLevel with GPT-2's pattern, or a Split regex (Isolated) then ByteLevel
  // without its own.
  const nlohmann::json pre = member(j, "pre_tokenizer");
  const auto type_of = [&](const nlohmann::json& p) {
    return member(p, "type").is_string() ? member(p, "type").get<std::string>() : "(none)";
  };
  const nlohmann::json steps =
      type_of(pre) == "Sequence" && member(pre, "pretokenizers").is_array() ? member(pre, "pretokenizers") : nlohmann::json::array({pre});
  std::string kinds;
  for (const auto& p : steps) kinds += (kinds.empty() ? "" : ", ") + type_of(p);
  const bool gpt2 = steps.size() == 1 && type_of(steps[0]) == "ByteLevel" && member(steps[0], "use_regex") != false;
  const bool split = steps.size() == 2 && type_of(steps[0]) == "Split" && type_of(steps[1]) == "ByteLevel" &&
                     member(steps[1], "use_regex") == false && member(steps[0], "behavior") == "Isolated" &&
                     member(steps[0], "invert") != true && member(member(steps[0], "pattern"), "Regex").is_string();
  if (!gpt2 && !split)
    throw Error(name + ": pre_tokenizer",
                "is [" + kinds + "]; ctxsim applies ByteLevel alone, or a Split regex (behavior Isolated) then ByteLevel without use_regex",
                fix_component);
  if (split) {
    m->pattern = member(member(steps[0], "pattern"), "Regex").get<std::string>();
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(m->pattern.data()), m->pattern.size(), PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    if (!code) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof message);
      throw Error(name + ": pre_tokenizer.pretokenizers[0].pattern.Regex",
                  "does not compile at character " + std::to_string(offset) + ": " + reinterpret_cast<const char*>(message),
                  "give the model's own tokenizer.json");
    }
    pcre2_code_free(code);
  }
  if (member(model, "byte_fallback") == true)
    throw Error(name + ": model.byte_fallback", "is true (sentencepiece-style BPE: Llama 2, Mistral), which ctxsim does not implement yet",
                fix_component);
  m->ignore_merges = member(model, "ignore_merges") == true;
  m->vocab = vocab_from_json(member(model, "vocab"), name + ": model.vocab", kVocabFix);
  index_bytes(*m, name + ": model.vocab");
  const nlohmann::json merges = member(model, "merges");
  if (!merges.is_array()) throw Error(name + ": model.merges", "expected a list of merges", kVocabFix);
  int32_t rank = 0;
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string where = name + ": model.merges[" + std::to_string(i) + "]";
    const nlohmann::json& e = merges[i];
    std::string left, right;
    if (e.is_string()) {  // "a b" (tokenizers < 0.20)
      const std::string s = e.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 >= s.size() || s.find(' ', space + 1) != std::string::npos)
        throw Error(where, "expected two tokens separated by one space", kVocabFix);
      left = s.substr(0, space), right = s.substr(space + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {  // ["a", "b"]
      left = e[0].get<std::string>(), right = e[1].get<std::string>();
    } else {
      throw Error(where, "expected \"a b\" or [\"a\", \"b\"]", kVocabFix);
    }
    add_merge(*m, left, right, rank++, where);
  }
  const nlohmann::json added = member(j, "added_tokens");
  if (!added.is_null() && !added.is_array()) throw Error(name + ": added_tokens", "expected a list", kVocabFix);
  std::vector<std::string> extra;  // added tokens past model.vocab, ids vocab.size() … in order
  const int32_t base = m->vocab.size();
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
    } else if (n < 0 || n >= base || m->vocab.token(int32_t(n)) != text) {
      throw Error(where,
                  "'" + utf8::replace_invalid(text.substr(0, 64)) + "' with id " + id.dump() +
                      " is neither that token of model.vocab nor the next id after it (" + std::to_string(base + int64_t(extra.size())) +
                      ")",
                  "give the model's own tokenizer.json");
    }
    if (member(e, "single_word") == true)
      throw Error(where, "'" + utf8::replace_invalid(text.substr(0, 64)) + "' matches single words only, which ctxsim does not implement",
                  "give a tokenizer.json without single_word added tokens");
    m->added.push_back({text, int32_t(n), member(e, "lstrip") == true, member(e, "rstrip") == true});
  }
  if (!extra.empty()) {
    std::vector<std::string> tokens;
    tokens.reserve(size_t(base) + extra.size());
    for (int32_t id = 0; id < base; ++id) tokens.emplace_back(m->vocab.token(id));
    tokens.insert(tokens.end(), extra.begin(), extra.end());
    m->vocab = Vocab::from_tokens(tokens);
  }
  sort_added(*m);
  return m;
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

BpeTokenizer::BpeTokenizer(std::shared_ptr<const BpeModel> model)
    : model_(std::move(model)), pattern_(std::make_unique<Pattern>(model_ ? model_->pattern : std::string())) {
  CTXSIM_CHECK(model_, "a BPE tokenizer needs its model");
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

void BpeTokenizer::merge(std::string_view piece, std::vector<int32_t>& ids) {
  constexpr size_t kMaxCached = size_t(1) << 20;  // pieces; a bound on memory over any corpus
  const std::string key(piece);
  if (const auto it = cache_.find(key); it != cache_.end()) {
    ids.insert(ids.end(), it->second.begin(), it->second.end());
    return;
  }
  std::vector<int32_t>& w = work_;
  w.clear();
  if (model_->ignore_merges) {  // a piece that is a token stays whole, whatever the merges say
    std::string spelled;
    for (unsigned char b : piece) utf8::append(spelled, byte_to_unicode(b));
    if (const int32_t id = model_->vocab.id(spelled); id >= 0) w.push_back(id);
  }
  if (w.empty())
    for (unsigned char b : piece) w.push_back(model_->byte_ids[b]);
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

void BpeTokenizer::encode_segment(std::string_view raw, Encoding& out) {
  std::string normalised;
  std::string_view text = raw;
  if (model_->nfc) {  // the normalizer runs on the text between added tokens, as the library's does
    normalised = utf8::nfc(raw);
    text = normalised;
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
    if (before > seg) encode_segment(text.substr(seg, before - seg), out);
    out.ids.push_back(hit->id);
    out.word_ids.push_back(out.num_words++);
    seg = after;
    i = after - 1;
  }
  if (seg < text.size()) encode_segment(text.substr(seg), out);
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
