// Tokenizer: hand-derived cases against the real bert-base-uncased vocabulary (uncased), and a
// small hand-written vocabulary for cased behaviour and the exact greedy WordPiece rules.
#include "stages/text/tokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "stages/base/error.h"
#include "stages/text/tokenizer_files.h"
#include "stages/text/tokenizer_json.h"
#include "test_helpers.h"

namespace ctxsim {
namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + v[i];
  return s;
}

class Uncased : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (std::filesystem::exists(test::kVocabPath)) tok_ = new BertTokenizer(Vocab::load(test::kVocabPath), TokenizerOptions{});
  }
  static void TearDownTestSuite() {
    delete tok_;
    tok_ = nullptr;
  }
  void SetUp() override { CTXSIM_REQUIRE_DATA(); }
  std::string tokens(const std::string& text) { return join(tok_->tokens(tok_->encode(text).ids)); }
  static BertTokenizer* tok_;
};
BertTokenizer* Uncased::tok_ = nullptr;

struct Case {
  const char* name;
  std::string text;
  std::string expected;
};

// Each expectation follows from BertTokenizer's rules by hand: clean → CJK split → NFC →
// whitespace split → lower + NFD accent strip → punctuation split → greedy WordPiece.
const std::vector<Case> kUncasedCases = {
    {"lower_case", "Hello World", "hello world"},
    {"all_caps", "THE JURY", "the jury"},
    {"accent_acute", "café", "cafe"},
    {"accents_several", "naïve résumé", "naive resume"},
    {"decomposed_accent_nfd_input", "cafe\u0301", "cafe"},
    {"accent_capital", "ÉCOLE", "ecole"},
    {"dotted_capital_i", "İstanbul", "istanbul"},
    {"apostrophe", "don't", "don ' t"},
    {"abbreviation_dots", "U.S.", "u . s ."},
    {"thousands_commas", "1,000,000", "1 , 000 , 000"},
    {"decimal", "3.14", "3 . 14"},
    {"currency", "$5.00", "$ 5 . 00"},
    {"punctuation_run", "Hello!!!", "hello ! ! !"},
    {"mixed_punctuation_run", "what?!...", "what ? ! . . ."},
    {"hyphen", "e-mail", "e - mail"},
    {"ascii_symbols_are_punctuation", "C++ a=b x^2 a|b ~", "c + + a = b x ^ 2 a | b ~"},
    {"at_and_hash", "@user #tag", "@ user # tag"},
    {"unicode_quotes", "\u201Cquoted\u201D", "\u201C quoted \u201D"},
    {"ellipsis_char", "wait\u2026", "wait \u2026"},
    {"em_dash", "yes\u2014no", "yes \u2014 no"},
    {"cjk_split", "北京", "北 京"},
    {"cjk_inside_latin", "a北b", "a 北 b"},
    {"hangul_nfd_jamo", "한", "\u1112 ##\u1161 ##\u11AB"},
    {"greek_sigma_per_character", "ΟΔΟΣ", "ο ##δ ##ο ##σ"},  // σ, not ς: per character (SPEC §1)
    {"greek_accent", "οδός", "ο ##δ ##ος"},
    {"sharp_s_kept", "straße", "st ##raße"},
    {"euro_not_punctuation", "€100", "€ ##100"},
    {"no_break_space", "a\u00A0b", "a b"},
    {"ideographic_space", "a\u3000b", "a b"},
    {"line_separator", "a\u2028b", "a b"},
    {"tabs_newlines", "\tone\ntwo\r\nthree ", "one two three"},
    {"zero_width_space_removed", "a\u200Bb", "ab"},
    {"soft_hyphen_removed", "co\u00ADoperate", "cooperate"},
    {"bom_removed", "\uFEFFhello", "hello"},
    {"bell_removed", "he\x07llo", "hello"},
    {"nul_removed", std::string("he\0llo", 6), "hello"},
    {"replacement_char_removed", "he\uFFFDllo", "hello"},
    {"private_use_removed", "a\uE000b", "ab"},
    {"emoji_unknown", "I \u2764 NY \U0001F600", "i [UNK] ny [UNK]"},
    {"emoji_glued_makes_word_unknown", "hello\U0001F600", "[UNK]"},
    {"unknown_subword_whole_word", "a\u2603b", "[UNK]"},
    {"wordpiece_continuation", "unaffable", "una ##ffa ##ble"},
    {"wordpiece_numbers", "12345", "123 ##45"},
    {"special_token_literal", "a [SEP] b", "a [SEP] b"},
    {"special_token_glued", "a[SEP]b", "a [SEP] b"},
    {"special_token_lowercase_is_text", "[sep]", "[ sep ]"},
    {"only_whitespace", " \t\n ", ""},
    {"empty", "", ""},
};

TEST_F(Uncased, HandDerivedCases) {
  for (const auto& c : kUncasedCases) EXPECT_EQ(tokens(c.text), c.expected) << "case " << c.name;
}

TEST_F(Uncased, KnownIds) {
  EXPECT_EQ(tok_->encode("the.").ids, (std::vector<int32_t>{1996, 1012}));
  EXPECT_EQ(tok_->encode("[CLS] [SEP] [PAD] [MASK] [UNK]").ids, (std::vector<int32_t>{101, 102, 0, 103, 100}));
  const Vocab& v = tok_->vocab();
  EXPECT_EQ(v.size(), 30522);
  EXPECT_EQ(v.pad_id(), 0);
  EXPECT_EQ(v.unk_id(), 100);
  EXPECT_EQ(v.token(1), "[unused0]");
}

TEST_F(Uncased, WordLengthLimit) {
  // 100 characters are tokenized; 101 become one [UNK] (max_input_chars_per_word = 100).
  const std::string w100(100, 'a'), w101(101, 'a');
  const auto e100 = tok_->encode(w100);
  EXPECT_GT(e100.ids.size(), 1u);
  for (auto id : e100.ids) EXPECT_NE(id, 100);
  EXPECT_EQ(tokens(w101), "[UNK]");
  // Characters, not bytes: 100 two-byte letters are still within the limit.
  std::string e_acute;
  for (int i = 0; i < 100; ++i) e_acute += "\u00E9";
  EXPECT_NE(tokens(e_acute), "[UNK]");
}

TEST_F(Uncased, WordIdsFollowWhitespaceWords) {
  const auto e = tok_->encode("Don't stop, U.S. unaffable");
  // don ' t | stop , | u . s . | una ##ffa ##ble
  EXPECT_EQ(e.word_ids, (std::vector<int32_t>{0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 3, 3}));
  EXPECT_EQ(e.num_words, 4);
  // A word that cleaning empties takes no word id.
  const auto z = tok_->encode("a \u200B b");
  EXPECT_EQ(z.word_ids, (std::vector<int32_t>{0, 1}));
}

TEST_F(Uncased, BasicTokenizerAlone) { EXPECT_EQ(join(tok_->basic_tokenize("Héllo, wörld!")), "hello , world !"); }

// Lower-casing is per character (SPEC §1: transformers 4.x lower-cases the text one character at
// a time, and the fast tokenizer likewise), so SpecialCasing's context rules never apply: a
// capital sigma is σ wherever it stands, never the word-final ς that Python's str.lower() of a
// whole word gives. The one unconditional multi-character mapping, İ, still gives i + U+0307.
TEST_F(Uncased, SigmaIsLowerCasedOneCharacterAtATime) {
  const std::pair<const char*, const char*> cases[] = {
      {"ΑΣ ΑΣ.", "ασ ασ ."},  // word-final: still σ
      {"ΣΑ Σ", "σα σ"},
      {"ΑΣΑ", "ασα"},
      {"Α'Σ", "α ' σ"},
      {"ΑΣ\u0301", "ασ"},  // the combining accent is stripped
      {"ς", "ς"},          // a final sigma in the text stays one
      {"\u00AAΣ \u216FΣ", "\u00AAσ ⅿσ"},
  };
  for (const auto& [text, want] : cases) EXPECT_EQ(join(tok_->basic_tokenize(text)), want) << text;
}

// A hand-written vocabulary: exact greedy longest-match and cased behaviour.
Vocab small_vocab() {
  return Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un",   "##aff",  "##able", "una",
                             "##ffa", "##b",   "Hello", "hello", "café",   "cafe", "##s",    "the",    "The",
                             "a",     "##a",   "##aa",  "x",     ".",      "É",    "##cole", "e"});
}

TEST(WordPiece, GreedyLongestMatchPrefersLongestPrefix) {
  BertTokenizer t(small_vocab(), TokenizerOptions{});
  // "una" is longer than "un", so greedy takes it even though un ##aff ##able also exists.
  EXPECT_EQ(join(t.tokens(t.encode("unaffable").ids)), "[UNK]");  // una + "ffable" has no match
  EXPECT_EQ(join(t.tokens(t.encode("unaffab").ids)), "una ##ffa ##b");
  EXPECT_EQ(join(t.tokens(t.encode("aaaaa").ids)), "a ##aa ##aa");
  EXPECT_EQ(join(t.tokens(t.encode("cafes").ids)), "cafe ##s");
}

TEST(WordPiece, ContinuationNeverMatchesAtWordStart) {
  BertTokenizer t(Vocab::from_tokens({"[UNK]", "##x", "y"}), TokenizerOptions{});
  EXPECT_EQ(join(t.tokens(t.encode("x y").ids)), "[UNK] y");
}

TEST(Cased, KeepsCaseAndAccents) {
  TokenizerOptions o;
  o.lower_case = o.strip_accents = false;
  BertTokenizer t(small_vocab(), o);
  EXPECT_EQ(join(t.tokens(t.encode("Hello hello The the").ids)), "Hello hello The the");
  EXPECT_EQ(join(t.tokens(t.encode("café cafe").ids)), "café cafe");
  EXPECT_EQ(join(t.tokens(t.encode("cafe\u0301").ids)), "café");  // NFC composes before lookup
  EXPECT_EQ(join(t.tokens(t.encode("École").ids)), "É ##cole");
  EXPECT_EQ(join(t.tokens(t.encode("HELLO").ids)), "[UNK]");
  EXPECT_EQ(join(t.tokens(t.encode("Hello.").ids)), "Hello .");
}

TEST(Cased, UncasedSameVocabularyLowersAndStrips) {
  BertTokenizer t(small_vocab(), TokenizerOptions{});
  EXPECT_EQ(join(t.tokens(t.encode("Hello HELLO café École").ids)), "hello hello cafe e ##cole");
}

TEST(Vocab, LoadErrors) {
  test::TempDir dir;
  EXPECT_THROW(Vocab::load((dir.path / "missing.txt").string()), Error);
  const auto empty = dir.write("empty.txt", "");
  EXPECT_THROW(Vocab::load(empty), Error);
  const auto no_unk = dir.write("no_unk.txt", "[PAD]\nthe\n");
  try {
    Vocab::load(no_unk);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[UNK]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(no_unk), std::string::npos) << e.what();
  }
  // A vocabulary without the tokens every sample needs names the file and the tokens.
  const auto no_cls = dir.write("no_cls.txt", "[PAD]\n[UNK]\n[SEP]\nthe\n");
  try {
    Vocab::load(no_cls);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(no_cls + ": the vocabulary lacks [CLS] ("), std::string::npos) << e.what();
  }
  const auto bad = dir.write("bad.txt", "[UNK]\nab\xff\n");
  try {
    Vocab::load(bad);
    FAIL() << "expected an error";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what(); }
}

TEST(Vocab, CrLfLinesAndDuplicatesLikeHuggingFace) {
  test::TempDir dir;
  const auto p = dir.write("v.txt", "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\nthe\r\nthe\r\n");
  const Vocab v = Vocab::load(p);
  EXPECT_EQ(v.size(), 6);
  EXPECT_EQ(v.id("the"), 5);  // a later duplicate wins, as in HF's dict
  EXPECT_EQ(v.token(4), "the");
}

// A vocabulary's text as stores keep it: a CRLF vocab.txt's CRs go, a CR inside a token stays
// (Llama 2's ";\r"); a byte-order mark and a token holding a line break are refused by name.
TEST(Vocab, LinesKeepACarriageReturnThatIsPartOfAToken) {
  EXPECT_EQ(vocab_lines("[PAD]\r\n[UNK]\r\nthe\r\n"), (std::vector<std::string>{"[PAD]", "[UNK]", "the"}));
  EXPECT_EQ(vocab_lines("a\n;\r\nb\n"), (std::vector<std::string>{"a", ";\r", "b"}));
  const std::vector<std::string> tokens = {"<unk>", ";\r", "\r", "x"};
  EXPECT_EQ(vocab_lines(Vocab::from_tokens(tokens).lines()), tokens);
  test::TempDir dir;
  EXPECT_HAS(test::error_of([&] { Vocab::load(dir.write("bom.txt", "\xEF\xBB\xBF[PAD]\n[UNK]\n[CLS]\n[SEP]\n")); }),
             "bom.txt: starts with a UTF-8 byte-order mark, which would become part of its first token");
  EXPECT_HAS(test::error_of([] {
               vocab_from_json(nlohmann::json{{"a", 0}, {"b\nc", 1}}, "vocab.json", "fix");
             }),
             "vocab.json: \"b\\nc\": holds a line break (U+000A)");
}

// Half of a byte-level BPE, or JSON that is no tokenizer, is named for what it is.
TEST(TokenizerFiles, HalvesAndEmptyJsonSayWhatTheyAre) {
  test::TempDir dir;
  EXPECT_HAS(test::error_of([&] { find_tokenizer_files(dir.write("merges.txt", "#version: 0.2\na b\n")); }),
             "merges.txt: is a merges.txt, one half of a byte-level BPE; fix: give the folder that holds it and its vocab.json");
  // GPT-2's vocab.json has a token "model": still a vocab.json, not a tokenizer.json.
  EXPECT_HAS(test::error_of([&] { find_tokenizer_files(dir.write("v.json", R"({"a": 0, "model": 1})")); }),
             "v.json: is a vocab.json (tokens to ids) without its merges.txt");
  EXPECT_HAS(test::error_of([&] { find_tokenizer_files(dir.write("e.json", "{}")); }),
             "e.json: is an empty JSON object ({}), not a tokenizer");
  EXPECT_HAS(test::error_of([&] { find_tokenizer_files(dir.write("l.json", "[1, 2]")); }),
             "l.json: holds a JSON array, not a tokenizer.json");
}

TEST(TokenizerConfig, ReadsDoLowerCase) {
  test::TempDir dir;
  EXPECT_TRUE(read_tokenizer_options(dir.path.string(), true).lower_case);
  dir.write("tokenizer_config.json", R"({"do_lower_case": false})");
  auto o = read_tokenizer_options(dir.path.string(), true);
  EXPECT_FALSE(o.lower_case);
  EXPECT_FALSE(o.strip_accents);
  dir.write("tokenizer_config.json", R"({"do_lower_case": true, "strip_accents": false})");
  o = read_tokenizer_options(dir.path.string(), true);
  EXPECT_TRUE(o.lower_case);
  EXPECT_FALSE(o.strip_accents);
  dir.write("tokenizer_config.json", "{not json");
  EXPECT_THROW(read_tokenizer_options(dir.path.string(), true), Error);
}

// A WordPiece tokenizer.json (what BertTokenizerFast saves): the vocabulary from model.vocab, the
// options from the BertNormalizer; the folder picks it when it has no vocab.txt; what ctxsim's
// WordPiece would not do exactly as the file says is refused naming the component.
TEST(TokenizerJson, WordPieceFromTokenizersFormat) {
  nlohmann::json j;
  j["model"] = {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"}, {"max_input_chars_per_word", 5}};
  j["model"]["vocab"] = {{"[PAD]", 0}, {"[UNK]", 1}, {"[CLS]", 2}, {"[SEP]", 3}, {"Café", 4}, {"cafe", 5}, {"##s", 6}};
  j["normalizer"] = {
      {"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true}, {"strip_accents", nullptr}, {"lowercase", false}};
  j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  WordPieceJson cased = parse_wordpiece_tokenizer_json(j.dump(), "tokenizer.json");
  EXPECT_FALSE(cased.options.lower_case);
  EXPECT_FALSE(cased.options.strip_accents);  // null follows lowercase
  EXPECT_EQ(cased.options.max_chars_per_word, 5);
  BertTokenizer t(std::move(cased.vocab), cased.options);
  EXPECT_EQ(t.encode("Cafés [SEP] cafess").ids, (std::vector<int32_t>{4, 6, 3, 1}));  // 6 characters: over the limit
  j["normalizer"]["lowercase"] = true;
  test::TempDir dir;
  dir.write("m/tokenizer.json", j.dump());
  const auto folder = open_tokenizer((dir.path / "m").string(), TokenizerOptions{});
  EXPECT_STREQ(folder->kind(), "WordPiece");
  EXPECT_EQ(folder->encode("Cafés").ids, (std::vector<int32_t>{5, 6}));
  const auto refused = [&](const char* key, const nlohmann::json& value, const char* message) {
    nlohmann::json k = j;
    k[nlohmann::json::json_pointer(key)] = value;
    try {
      parse_wordpiece_tokenizer_json(k.dump(), "tok.json");
      ADD_FAILURE() << key << " accepted";
    } catch (const Error& e) { EXPECT_HAS(std::string(e.what()), message); }
  };
  refused("/model/continuing_subword_prefix", "@@", "tok.json: model.continuing_subword_prefix: is \"@@\"");
  refused("/normalizer/type", "NFKC", "tok.json: normalizer: is NFKC");
  refused("/normalizer/clean_text", false, "tok.json: normalizer.clean_text: is false");
  refused("/normalizer/lowercase", "yes", "tok.json: normalizer.lowercase: expected true, false or null");
  refused("/pre_tokenizer/type", "Whitespace", "tok.json: pre_tokenizer: is Whitespace");
  refused("/model/unk_token", "<unk>", "tok.json: model.unk_token");
  refused("/model/max_input_chars_per_word", 0, "tok.json: model.max_input_chars_per_word");
  refused("/model/vocab", nlohmann::json::object({{"a", 0}}), "tok.json: model.vocab: has no [UNK] token");
}

}  // namespace
}  // namespace ctxsim
