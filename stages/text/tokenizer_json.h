// Hugging Face tokenizer.json files (the `tokenizers` library's format): which model a file holds,
// its token → id object as a Vocab, and a WordPiece file (BERT's: BertNormalizer, BertPreTokenizer,
// "##" continuations) as the vocabulary and options of a BertTokenizer. Byte-level BPE files are
// read by BpeModel::parse_tokenizer_json (bpe.h).
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "stages/text/tokenizer.h"

namespace ctxsim {

// A tokenizer.json's model.type ("BPE", "WordPiece", "Unigram", …; "(none)" when absent). Reads and
// parses the file; an Error names it when it is not JSON.
std::string tokenizer_json_model_type(const std::string& path);

// A JSON object of tokens to ids (a vocab.json, a tokenizer.json's model.vocab): ids 0 … n-1 once
// each, or an Error naming `name` with `fix`.
Vocab vocab_from_json(const nlohmann::json& j, const std::string& name, const std::string& fix);

// A tokenizer.json's post_processor: ctxsim frames samples itself (SPEC §7), so one that only puts
// special tokens of one id each around the sequence (TemplateProcessing, BertProcessing,
// RobertaProcessing) or changes only offsets (ByteLevel), or a Sequence of those, changes no id
// ctxsim computes. Anything else is an Error naming the file and the component, with `fix`.
void check_post_processor(const nlohmann::json& file, const std::string& name, const std::string& fix);

struct WordPieceJson {
  Vocab vocab;
  TokenizerOptions options;  // from the BertNormalizer and the model's max_input_chars_per_word
};
// A WordPiece tokenizer.json. Anything BertTokenizer does not do exactly as the file says (another
// normalizer or pre-tokenizer, a continuation prefix other than "##", an unknown token other than
// [UNK], clean_text off) is an Error naming the component and the file.
WordPieceJson load_wordpiece_tokenizer_json(const std::string& path);
WordPieceJson parse_wordpiece_tokenizer_json(const std::string& text, const std::string& name);

}  // namespace ctxsim
