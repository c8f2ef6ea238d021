#include "stages/text/tokenizer_json.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/text/utf8.h"

namespace ctxsim {
namespace {

constexpr const char* kWordPieceFix =
    "give the model's vocab.txt (and its tokenizer_config.json) instead, or a tokenizer.json that Hugging Face's BertTokenizerFast writes";
constexpr size_t kMaxTokenizerJsonBytes = size_t(128) << 20;

nlohmann::json parse_json(const std::string& text, const std::string& name) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(name, std::string("not valid JSON: ") + e.what(), "give the tokenizer.json as Hugging Face saves it");
  }
}

nlohmann::json member(const nlohmann::json& o, const char* key) { return o.is_object() && o.contains(key) ? o[key] : nlohmann::json(); }

std::string type_of(const nlohmann::json& o) {
  const nlohmann::json t = member(o, "type");
  return t.is_string() ? t.get<std::string>() : std::string("(none)");
}

// A boolean member: its value, `absent` when missing or null, an Error when another type.
bool flag(const nlohmann::json& o, const char* key, bool absent, const std::string& where) {
  const nlohmann::json v = member(o, key);
  if (v.is_null()) return absent;
  if (!v.is_boolean()) throw Error(where + "." + key, "expected true, false or null, got " + v.dump().substr(0, 40), kWordPieceFix);
  return v.get<bool>();
}

}  // namespace

std::string tokenizer_json_model_type(const std::string& path) {
  const nlohmann::json j = parse_json(read_file_bytes(path, kMaxTokenizerJsonBytes, "the tokenizer", kWordPieceFix), path);
  if (member(j, "model").is_object()) return type_of(member(j, "model"));  // (a vocab.json may have the token "model")
  // No model: say what the file is instead.
  const char* fix = "give the model's tokenizer.json, its vocab.txt, or the folder that holds its vocab.json and merges.txt";
  if (j.is_object() && j.empty()) throw Error(path, "is an empty JSON object ({}), not a tokenizer", fix);
  if (j.is_object() && std::all_of(j.begin(), j.end(), [](const nlohmann::json& v) { return v.is_number_integer(); }))
    throw Error(path, "is a vocab.json (tokens to ids) without its merges.txt: a byte-level BPE needs both",
                "give the folder that holds vocab.json and merges.txt, or the model's tokenizer.json");
  if (!j.is_object())
    throw Error(path, std::string("holds a JSON ") + j.type_name() + ", not a tokenizer.json (an object with a model)", fix);
  return "(none)";
}

Vocab vocab_from_json(const nlohmann::json& j, const std::string& name, const std::string& fix) {
  if (!j.is_object() || j.empty()) throw Error(name, "expected a JSON object of tokens to ids, got " + std::string(j.type_name()), fix);
  if (j.size() > size_t(std::numeric_limits<int32_t>::max() / 2)) throw Error(name, "too many tokens", fix);
  std::vector<std::string> tokens(j.size());
  std::vector<uint8_t> seen(j.size(), 0);
  for (const auto& [token, id] : j.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= int64_t(j.size()))
      throw Error(name + ": \"" + utf8::replace_invalid(token.substr(0, 64)) + "\"",
                  "the id " + id.dump() + " is not a whole number from 0 to " + std::to_string(j.size() - 1) + " (the token count - 1)",
                  fix);
    if (token.find('\n') != std::string::npos)
      throw Error(name + ": \"" + utf8::replace_invalid(token.substr(0, 64)) + "\"",
                  "holds a line break (U+000A), which no tokenizer ctxsim reads has in a token (byte-level BPE spells it Ċ, "
                  "sentencepiece <0x0A>) and a vocabulary line cannot hold",
                  fix);
    const size_t i = size_t(id.get<int64_t>());
    if (seen[i]) throw Error(name, "the id " + std::to_string(i) + " is given to two tokens", fix);
    seen[i] = 1;
    tokens[i] = token;
  }
  return Vocab::from_tokens(tokens);
}

namespace {

void check_processor(const nlohmann::json& p, const std::string& where, const std::string& fix) {
  const std::string type = type_of(p);
  if (p.is_null() || type == "ByteLevel" || type == "BertProcessing" || type == "RobertaProcessing") return;
  if (type == "Sequence") {
    const nlohmann::json steps = member(p, "processors");
    if (!steps.is_array()) throw Error(where + ".processors", "is not a list of post-processors", fix);
    for (size_t i = 0; i < steps.size(); ++i) check_processor(steps[i], where + ".processors[" + std::to_string(i) + "]", fix);
    return;
  }
  if (type != "TemplateProcessing")
    throw Error(where, "is \"" + type + "\", which ctxsim does not apply (it frames samples as SPEC §7 says)", fix);
  // The single-sequence template: special tokens, the sequence A once, special tokens.
  const nlohmann::json single = member(p, "single");
  int sequences = 0;
  if (!single.is_array()) throw Error(where + ".single", "is not a template (a list of pieces)", fix);
  for (const nlohmann::json& piece : single) {
    if (piece.is_object() && piece.size() == 1 && piece.contains("Sequence") && member(piece["Sequence"], "id") == "A") {
      ++sequences;
    } else if (!(piece.is_object() && piece.size() == 1 && piece.contains("SpecialToken"))) {
      throw Error(where + ".single", "holds " + piece.dump().substr(0, 60) + ", which is neither a special token nor the sequence A", fix);
    }
  }
  if (sequences != 1) throw Error(where + ".single", "does not hold the sequence A once", fix);
  const nlohmann::json specials = member(p, "special_tokens");
  if (!specials.is_null() && !specials.is_object()) throw Error(where + ".special_tokens", "is not an object", fix);
  if (specials.is_object())
    for (const auto& [token, s] : specials.items())
      if (!member(s, "ids").is_array() || member(s, "ids").size() != 1)
        throw Error(where + ".special_tokens: \"" + utf8::replace_invalid(token.substr(0, 64)) + "\"",
                    "adds " + std::to_string(member(s, "ids").size()) + " ids, which no frame of ctxsim does", fix);
}

}  // namespace

void check_post_processor(const nlohmann::json& file, const std::string& name, const std::string& fix) {
  check_processor(member(file, "post_processor"), name + ": post_processor", fix);
}

WordPieceJson parse_wordpiece_tokenizer_json(const std::string& text, const std::string& name) {
  const nlohmann::json j = parse_json(text, name);
  check_post_processor(j, name, kWordPieceFix);
  const nlohmann::json model = member(j, "model");
  if (type_of(model) != "WordPiece")
    throw Error(name + ": model.type", "is " + type_of(model) + ", not WordPiece", "give a BERT tokenizer.json or the model's vocab.txt");
  const nlohmann::json prefix = member(model, "continuing_subword_prefix");
  if (!prefix.is_null() && prefix != "##")
    throw Error(name + ": model.continuing_subword_prefix", "is " + prefix.dump().substr(0, 40) + "; ctxsim's WordPiece continues with ##",
                kWordPieceFix);
  const nlohmann::json unk = member(model, "unk_token");
  if (!unk.is_null() && unk != "[UNK]")
    throw Error(name + ": model.unk_token", "is " + unk.dump().substr(0, 40) + "; ctxsim's WordPiece's unknown token is [UNK]",
                kWordPieceFix);
  WordPieceJson out;
  const nlohmann::json max_chars = member(model, "max_input_chars_per_word");
  if (!max_chars.is_null()) {
    if (!max_chars.is_number_integer() || max_chars.get<int64_t>() < 1 || max_chars.get<int64_t>() > (int64_t(1) << 20))
      throw Error(name + ": model.max_input_chars_per_word", "expected a whole number from 1 to 1048576", kWordPieceFix);
    out.options.max_chars_per_word = int(max_chars.get<int64_t>());
  }
  const nlohmann::json norm = member(j, "normalizer");
  if (type_of(norm) != "BertNormalizer")
    throw Error(name + ": normalizer",
                "is " + type_of(norm) + "; ctxsim's WordPiece applies BERT's normalizer (BertNormalizer) and no other", kWordPieceFix);
  if (!flag(norm, "clean_text", true, name + ": normalizer"))
    throw Error(name + ": normalizer.clean_text", "is false; ctxsim's WordPiece always removes control characters", kWordPieceFix);
  out.options.split_cjk = flag(norm, "handle_chinese_chars", true, name + ": normalizer");
  out.options.lower_case = flag(norm, "lowercase", true, name + ": normalizer");
  out.options.strip_accents = flag(norm, "strip_accents", out.options.lower_case, name + ": normalizer");  // null follows lowercase
  const nlohmann::json pre = member(j, "pre_tokenizer");
  if (type_of(pre) != "BertPreTokenizer")
    throw Error(name + ": pre_tokenizer",
                "is " + type_of(pre) + "; ctxsim's WordPiece splits words as BertPreTokenizer does and no other way", kWordPieceFix);
  out.vocab = vocab_from_json(member(model, "vocab"), name + ": model.vocab", kWordPieceFix);
  if (out.vocab.unk_id() < 0) throw Error(name + ": model.vocab", "has no [UNK] token", kWordPieceFix);
  return out;
}

WordPieceJson load_wordpiece_tokenizer_json(const std::string& path) {
  return parse_wordpiece_tokenizer_json(read_file_bytes(path, kMaxTokenizerJsonBytes, "the tokenizer", kWordPieceFix), path);
}

}  // namespace ctxsim
