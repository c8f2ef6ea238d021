#include "stages/text/tokenizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/model_folder.h"
#include "stages/text/utf8.h"

namespace ctxsim {
namespace {

bool is_ascii(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

int category(char32_t cp) { return utf8proc_category(static_cast<utf8proc_int32_t>(cp)); }

// HF _is_control: \t \n \r are whitespace; every other category C* (Cc Cf Cs Co Cn) is control.
bool is_control(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  if (cp < 0x80) return cp < 0x20 || cp == 0x7F;
  const int c = category(cp);
  return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CS || c == UTF8PROC_CATEGORY_CO ||
         c == UTF8PROC_CATEGORY_CN;
}

// HF _is_whitespace: space, \t, \n, \r and category Zs.
bool is_whitespace(char32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
  return cp >= 0x80 && category(cp) == UTF8PROC_CATEGORY_ZS;
}

// HF _is_punctuation: the four ASCII non-alphanumeric ranges, and category P*.
bool is_punctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)) return true;
  if (cp < 0x80) return false;
  const int c = category(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

// HF _is_chinese_char: the CJK Unified Ideographs blocks (not Hangul, Hiragana or Katakana).
bool is_cjk(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// Python's str.split() also splits on line/paragraph separators, which cleaning keeps.
bool is_word_break(char32_t cp) { return cp == ' ' || cp == 0x2028 || cp == 0x2029; }

const char* const kSpecialNames[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

}  // namespace

// ----------------------------------------------------------------------------- Vocab ----

Vocab Vocab::load(const std::string& path) {
  const std::string content = read_file_bytes(path, kMaxVocabBytes, "the vocabulary",
                                              "give a WordPiece vocab.txt (scripts/setup.sh makes data/vocab/bert-base-uncased.txt)");
  const size_t bad = utf8::find_invalid(content);
  if (bad != utf8::npos)
    throw Error(path, "invalid UTF-8 at " + utf8::describe_offset(content, bad), "a vocab.txt is UTF-8 text, one token per line");
  if (utf8::starts_with_bom(content))
    throw Error(path, "starts with a UTF-8 byte-order mark, which would become part of its first token", utf8::kBomFix);
  const std::vector<std::string> tokens = split_lines(content);
  if (tokens.empty()) throw Error(path, "the vocabulary is empty", "give a WordPiece vocab.txt");
  Vocab v = from_tokens(tokens);
  std::vector<std::string> missing;
  for (const auto& [name, id] : {std::pair{"[UNK]", v.unk_}, {"[CLS]", v.cls_}, {"[SEP]", v.sep_}, {"[PAD]", v.pad_}})
    if (id < 0) missing.push_back(name);
  if (!missing.empty())
    throw Error(path, "the vocabulary lacks " + join(missing) + " (every BERT sample needs [CLS], [SEP] and [PAD]; unknown words [UNK])",
                "give the model's BERT WordPiece vocab.txt, each special token on a line of its own");
  return v;
}

Vocab Vocab::from_tokens(const std::vector<std::string>& tokens) {
  Vocab v;
  for (const auto& t : tokens) {
    v.offsets_.emplace_back(static_cast<uint32_t>(v.arena_->size()), static_cast<uint32_t>(t.size()));
    *v.arena_ += t;
  }
  v.index();
  return v;
}

std::vector<std::string> vocab_lines(std::string_view text) {
  std::vector<std::string> out;
  bool crlf = !text.empty();
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    out.emplace_back(text.substr(pos, end - pos));
    crlf = crlf && !out.back().empty() && out.back().back() == '\r';
    pos = end + 1;
  }
  if (crlf)
    for (std::string& t : out) t.pop_back();
  return out;
}

std::string Vocab::lines() const {
  std::string text;
  for (int32_t i = 0; i < size(); ++i) (text += token(i)) += '\n';
  return text;
}

void Vocab::index() {
  // Later duplicates win, as in HF's load_vocab (a dict filled in file order).
  for (int32_t id = 0; id < size(); ++id) {
    const std::string_view t = token(id);
    all_[t] = id;
    if (t.size() > 2 && t[0] == '#' && t[1] == '#')
      cont_[t.substr(2)] = id;
    else
      start_[t] = id;
  }
  for (const char* name : kSpecialNames) {
    const int32_t i = id(name);
    if (i >= 0) specials_.emplace_back(name, i);
  }
  // Longest first, so matching at a position prefers the longer literal.
  std::sort(specials_.begin(), specials_.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  pad_ = id("[PAD]");
  unk_ = id("[UNK]");
  cls_ = id("[CLS]");
  sep_ = id("[SEP]");
  mask_ = id("[MASK]");
}

std::string_view Vocab::token(int32_t id) const {
  if (id < 0 || id >= size()) return "[UNK]";
  return std::string_view(*arena_).substr(offsets_[id].first, offsets_[id].second);
}

std::vector<int32_t> Vocab::special_ids() const {
  std::vector<int32_t> ids;
  for (int32_t id : {pad_, unk_, cls_, sep_, mask_})
    if (id >= 0) ids.push_back(id);
  return ids;
}

int32_t Vocab::id(std::string_view t) const {
  const auto it = all_.find(t);
  return it == all_.end() ? -1 : it->second;
}
int32_t Vocab::start_id(std::string_view p) const {
  const auto it = start_.find(p);
  return it == start_.end() ? -1 : it->second;
}
int32_t Vocab::continuation_id(std::string_view p) const {
  const auto it = cont_.find(p);
  return it == cont_.end() ? -1 : it->second;
}

TokenizerOptions read_tokenizer_options(const std::string& model_dir, bool default_lower_case) {
  TokenizerOptions o;
  o.lower_case = default_lower_case;
  o.strip_accents = default_lower_case;
  const auto file = std::filesystem::path(ModelFolder(model_dir).tokenizer_config());
  if (!std::filesystem::exists(file)) return o;
  const std::string text = read_file_bytes(file.string(), kMaxJsonBytes);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(file.string(), std::string("malformed JSON: ") + e.what(), "fix the file or delete it to use the defaults");
  }
  const auto get_bool = [&](const char* key, bool& dst) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return false;
    if (!it->is_boolean()) throw Error(file.string() + ": " + key, "expected true or false", "fix the value");
    dst = it->get<bool>();
    return true;
  };
  get_bool("do_lower_case", o.lower_case);
  o.strip_accents = o.lower_case;  // strip_accents: null follows do_lower_case
  get_bool("strip_accents", o.strip_accents);
  get_bool("tokenize_chinese_chars", o.split_cjk);
  return o;
}

// ------------------------------------------------------------------------ Tokenizer -----

BertTokenizer::BertTokenizer(Vocab vocab, TokenizerOptions options) : vocab_(std::move(vocab)), options_(options) {
  if (vocab_.unk_id() < 0) throw Error("vocabulary", "no [UNK] token", "give a BERT vocab.txt");
}

void BertTokenizer::normalise(std::string_view text, std::string& out) const {
  out.clear();
  if (is_ascii(text)) {
    for (char ch : text) {
      const auto cp = static_cast<unsigned char>(ch);
      if (cp == 0 || is_control(cp)) continue;
      out.push_back(is_whitespace(cp) ? ' ' : ch);
    }
    return;
  }
  size_t i = 0;
  while (i < text.size()) {
    const char32_t cp = utf8::next(text, i);
    if (cp == 0 || cp == 0xFFFD || is_control(cp)) continue;
    if (is_whitespace(cp)) {
      out.push_back(' ');
    } else if (options_.split_cjk && is_cjk(cp)) {
      out.push_back(' ');
      utf8::append(out, cp);
      out.push_back(' ');
    } else {
      utf8::append(out, cp);
    }
  }
  if (!is_ascii(out)) {
    // transformers 4.x normalises to NFC before splitting into words.
    utf8proc_uint8_t* nfc = utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(out.c_str()));
    if (nfc) {
      out.assign(reinterpret_cast<const char*>(nfc));
      std::free(nfc);
    }
  }
}

void BertTokenizer::lower_and_strip(std::string_view word, std::string& out) const {
  out.clear();
  if (is_ascii(word)) {
    for (char c : word) out.push_back(options_.lower_case && c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
    return;
  }
  utf8proc_int32_t dec[32];
  const auto emit = [&](char32_t cp) {
    if (!options_.strip_accents) {
      utf8::append(out, cp);
      return;
    }
    const auto n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), dec, 32, UTF8PROC_DECOMPOSE, nullptr);
    if (n < 0 || n > 32) {
      utf8::append(out, cp);
      return;
    }
    for (utf8proc_ssize_t k = 0; k < n; ++k)
      if (category(static_cast<char32_t>(dec[k])) != UTF8PROC_CATEGORY_MN) utf8::append(out, static_cast<char32_t>(dec[k]));
  };
  for (size_t i = 0; i < word.size();) {
    char32_t cp = utf8::next(word, i);
    if (options_.lower_case) {
      if (cp == 0x130) {  // İ: Python's full lower-case mapping is "i" + U+0307
        emit('i');
        emit(0x307);
        continue;
      }
      // One character at a time, without context (SPEC §1, as transformers 4.x and the fast
      // tokenizer): a word-final Σ becomes σ, not ς.
      cp = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
    }
    emit(cp);
  }
}

void BertTokenizer::wordpiece(std::string_view word, std::vector<int32_t>& ids) {
  auto hit = cache_.find(std::string(word));
  if (hit != cache_.end()) {
    ids.insert(ids.end(), hit->second.begin(), hit->second.end());
    return;
  }
  std::vector<int32_t> pieces;
  // Code point boundaries: the greedy match moves by characters, not bytes.
  std::vector<uint32_t> bounds;
  for (size_t i = 0; i < word.size();) {
    bounds.push_back(static_cast<uint32_t>(i));
    utf8::next(word, i);
  }
  const size_t nchars = bounds.size();
  bounds.push_back(static_cast<uint32_t>(word.size()));
  if (static_cast<int>(nchars) > options_.max_chars_per_word) {
    pieces.push_back(vocab_.unk_id());
  } else {
    size_t start = 0;
    while (start < nchars) {
      int32_t found = -1;
      size_t end = nchars;
      for (; end > start; --end) {
        const std::string_view sub = word.substr(bounds[start], bounds[end] - bounds[start]);
        found = start == 0 ? vocab_.start_id(sub) : vocab_.continuation_id(sub);
        if (found >= 0) break;
      }
      if (found < 0) {
        pieces.assign(1, vocab_.unk_id());
        break;
      }
      pieces.push_back(found);
      start = end;
    }
  }
  ids.insert(ids.end(), pieces.begin(), pieces.end());
  if (cache_.size() < (1u << 20)) cache_.emplace(std::string(word), std::move(pieces));
}

template <class OnWord>
void BertTokenizer::for_each_word(std::string_view text, OnWord&& on_word) {
  std::string normalised;
  normalise(text, normalised);
  const auto word_done = [&](std::string_view raw) {
    if (options_.lower_case || options_.strip_accents) {
      lower_and_strip(raw, word_buf_);
      on_word(std::string_view(word_buf_));
    } else {
      on_word(raw);
    }
  };
  size_t i = 0, word_start = 0;
  while (i < normalised.size()) {
    const size_t at = i;
    if (is_word_break(utf8::next(normalised, i))) {
      if (at > word_start) word_done(std::string_view(normalised).substr(word_start, at - word_start));
      word_start = i;
    }
  }
  if (normalised.size() > word_start) word_done(std::string_view(normalised).substr(word_start));
}

template <class OnPiece>
void BertTokenizer::for_each_piece(std::string_view word, OnPiece&& on_piece) {
  size_t i = 0, piece_start = 0;
  while (i < word.size()) {
    const size_t at = i;
    if (!is_punctuation(utf8::next(word, i))) continue;
    if (at > piece_start) on_piece(word.substr(piece_start, at - piece_start));
    on_piece(word.substr(at, i - at));
    piece_start = i;
  }
  if (word.size() > piece_start) on_piece(word.substr(piece_start));
}

void BertTokenizer::encode_segment(std::string_view text, Encoding& out) {
  for_each_word(text, [&](std::string_view word) {
    const size_t before = out.ids.size();
    for_each_piece(word, [&](std::string_view piece) { wordpiece(piece, out.ids); });
    if (out.ids.size() > before) {
      out.word_ids.resize(out.ids.size(), out.num_words);
      ++out.num_words;
    }
  });
}

void BertTokenizer::encode(std::string_view text, Encoding& out) {
  // Literal special tokens ("[SEP]") keep their ids, as HF's added-token split does.
  size_t seg = 0, i = 0;
  const auto& specials = vocab_.specials();
  while (i < text.size()) {
    i = text.find('[', i);
    if (i == std::string_view::npos) break;
    bool matched = false;
    for (const auto& [name, id] : specials) {
      if (text.compare(i, name.size(), name) != 0) continue;
      if (i > seg) encode_segment(text.substr(seg, i - seg), out);
      out.ids.push_back(id);
      out.word_ids.push_back(out.num_words++);
      i += name.size();
      seg = i;
      matched = true;
      break;
    }
    if (!matched) ++i;
  }
  if (seg < text.size()) encode_segment(text.substr(seg), out);
}

std::vector<std::string> BertTokenizer::tokens(const std::vector<int32_t>& ids) const {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (int32_t id : ids) out.emplace_back(vocab_.token(id));
  return out;
}

std::vector<std::string> BertTokenizer::basic_tokenize(std::string_view text) {
  std::vector<std::string> words;
  for_each_word(text, [&](std::string_view word) { for_each_piece(word, [&](std::string_view piece) { words.emplace_back(piece); }); });
  return words;
}

std::string BertTokenizer::decode(const int32_t* ids, size_t n) const {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    const std::string_view t = vocab_.token(ids[i]);
    if (t.size() > 2 && t[0] == '#' && t[1] == '#' && !s.empty()) {
      s.append(t.substr(2));
    } else {
      if (!s.empty()) s.push_back(' ');
      s.append(t);
    }
  }
  return s;
}

}  // namespace ctxsim
