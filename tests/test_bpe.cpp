// Byte-level BPE (SPEC §7): GPT-2's bytes-to-unicode table, the pre-tokenizer's pieces and the
// merge order worked by hand on tiny vocabularies, words, the loaders' errors on hostile files,
// and (label integration) GPT-2's real files: known ids, and every Brown sentence's tokens spell
// its bytes back. The exact ids on 12,000 lines against two npm encoders: tests/bpe_test.sh.
#include "stages/text/bpe.h"
#include "stages/text/frame.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "stages/base/error.h"
#include "stages/text/corpus.h"
#include "stages/text/tokenizer_files.h"
#include "stages/text/utf8.h"
#include "test_helpers.h"

namespace ctxsim {
namespace {

// vocab.json text of the 256 byte tokens (ids 0-255 in byte order) and then `extra`.
std::string vocab_json(const std::vector<std::string>& extra) {
  nlohmann::json j = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) {
    std::string s;
    utf8::append(s, byte_to_unicode(uint8_t(b)));
    j[s] = b;
  }
  for (size_t i = 0; i < extra.size(); ++i) j[extra[i]] = 256 + int(i);
  return j.dump();
}

BpeTokenizer tiny(const std::vector<std::string>& extra, const std::string& merges) {
  return BpeTokenizer(BpeModel::parse(vocab_json(extra), "vocab.json", "#version: 0.2\n" + merges, "merges.txt"));
}

using test::error_of;

TEST(ByteLevel, TheTableIsGpt2s) {
  EXPECT_EQ(byte_to_unicode('!'), U'!');
  EXPECT_EQ(byte_to_unicode('A'), U'A');
  EXPECT_EQ(byte_to_unicode(0xE9), U'\u00E9');  // printable Latin-1 spells itself
  EXPECT_EQ(byte_to_unicode(0), U'\u0100');     // the first of the rest
  EXPECT_EQ(byte_to_unicode(' '), U'\u0120');   // 'Ġ': 33rd of the rest (0-32)
  EXPECT_EQ(byte_to_unicode('\n'), U'\u010A');  // 'Ċ'
  EXPECT_EQ(byte_to_unicode(0xAD), U'\u0143');  // the soft hyphen is the last
  std::set<char32_t> seen;
  for (int b = 0; b < 256; ++b) seen.insert(byte_to_unicode(uint8_t(b)));
  EXPECT_EQ(seen.size(), 256u);  // reversible
}

TEST(ByteLevel, PiecesFollowGpt2sPattern) {
  BpeTokenizer t = tiny({}, "");
  const auto pieces = [&](std::string_view text) {
    std::vector<std::string> out;
    for (auto p : t.pieces(text)) out.emplace_back(p);
    return out;
  };
  // "  here": \s+(?!\S) gives back the space before the letters, which " ?\p{L}+" takes.
  EXPECT_EQ(pieces("I'm  here\t!"), (std::vector<std::string>{"I", "'m", " ", " here", "\t", "!"}));
  EXPECT_EQ(pieces("don't 42x"), (std::vector<std::string>{"don", "'t", " 42", "x"}));
  EXPECT_EQ(pieces("IT'S"), (std::vector<std::string>{"IT", "'", "S"}));              // the contractions are lower-case only
  EXPECT_EQ(pieces("end  "), (std::vector<std::string>{"end", "  "}));                // trailing spaces: one piece
  EXPECT_EQ(pieces("naïve Привет"), (std::vector<std::string>{"naïve", " Привет"}));  // \p{L} is Unicode's
  EXPECT_EQ(pieces("a..b"), (std::vector<std::string>{"a", "..", "b"}));
}

TEST(ByteLevel, MergesApplyByRankNotByPosition) {
  // "b c" has rank 0 and "a b" rank 1: in "abc" the later pair merges first, then nothing joins a+bc.
  BpeTokenizer t = tiny({"bc", "ab"}, "b c\na b\n");
  EXPECT_EQ(t.encode("abc").ids, (std::vector<int32_t>{'a', 256}));
  EXPECT_EQ(t.encode("abd").ids, (std::vector<int32_t>{257, 'd'}));
  // Every occurrence of the best pair, left to right without overlap: "aaa" with "a a" → aa, a.
  BpeTokenizer u = tiny({"aa", "aaaa"}, "a a\naa aa\n");
  EXPECT_EQ(u.encode("aaa").ids, (std::vector<int32_t>{256, 'a'}));
  EXPECT_EQ(u.encode("aaaaa").ids, (std::vector<int32_t>{257, 'a'}));
  // Merges never cross pieces: " a" is one piece, "a" another.
  BpeTokenizer v = tiny({"\xC4\xA0"
                         "a"},
                        "\xC4\xA0 a\n");  // "Ġa"
  EXPECT_EQ(v.encode("a a").ids, (std::vector<int32_t>{'a', 256}));
}

TEST(ByteLevel, AWordStartsAtASpace) {
  BpeTokenizer t = tiny({}, "");
  const Encoding e = t.encode("hi, you\tthere");  // pieces: hi , ␠you \t there
  EXPECT_EQ(e.word_ids, (std::vector<int32_t>{0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(e.num_words, 2);
  Encoding more = e;
  t.encode(" next", more);  // appending continues the numbering
  EXPECT_EQ(more.word_ids.back(), 2);
  EXPECT_EQ(more.num_words, 3);
  EXPECT_EQ(t.encode("").ids.size(), 0u);
  EXPECT_HAS(error_of([&] { t.encode(std::string("a\xC3", 2)); }), "invalid UTF-8");
}

TEST(ByteLevelFiles, HostileFilesAreNamed) {
  const std::string v = vocab_json({"ab"});
  const auto parse = [&](const std::string& vocab, const std::string& merges) {
    return error_of([&] { BpeModel::parse(vocab, "vocab.json", merges, "merges.txt"); });
  };
  EXPECT_HAS(parse(v, "a b\n"), "merges.txt:1: a merges file starts with its '#version: 0.2' line");
  EXPECT_HAS(parse(v, "#version: 0.2\na b c\n"), "merges.txt:2: expected two tokens separated by one space");
  EXPECT_HAS(parse(v, "#version: 0.2\na b\nb  c\n"), "merges.txt:3:");
  EXPECT_HAS(parse(v, "#version: 0.2\nb c\n"), "merges.txt:2: the merge gives 'bc', which is not a token of the vocabulary");
  EXPECT_HAS(parse(v, "#version: 0.2\nab zz\n"), "the merge's part 'zz' is not a token of the vocabulary");
  EXPECT_HAS(parse("[1, 2]", "#version: 0.2\n"), "vocab.json: expected a JSON object of tokens to ids");
  EXPECT_HAS(parse("{\"a\": 0, \"b\": 0}", "#version: 0.2\n"), "is given to two tokens");
  EXPECT_HAS(parse("{\"a\": 5}", "#version: 0.2\n"), "is not a whole number from 0 to 0");
  EXPECT_HAS(parse("{\"a\": 0, \"b\": 1}", "#version: 0.2\n"), "no token for the byte 0");
  EXPECT_HAS(parse("{not json", ""), "vocab.json: not valid JSON");
  // tokenizer.json: another model type, and a BPE without the byte-level pre-tokenizer.
  EXPECT_HAS(error_of([] { BpeModel::parse_tokenizer_json(R"({"model": {"type": "WordPiece"}})", "tokenizer.json"); }),
             "tokenizer.json: model.type: is WordPiece");
  EXPECT_HAS(error_of([] { BpeModel::parse_tokenizer_json(R"({"model": {"type": "Unigram"}})", "tokenizer.json"); }), "is Unigram");
  EXPECT_HAS(error_of([] {
               BpeModel::parse_tokenizer_json(R"({"model": {"type": "BPE"}, "pre_tokenizer": {"type": "Whitespace"}})", "tokenizer.json");
             }),
             "tokenizer.json: pre_tokenizer: is [Whitespace]; ctxsim applies Split regexes (behavior Isolated) and Digits, then ByteLevel");
  // Components ctxsim does not apply are named: a normalizer, sentencepiece's byte fallback, a
  // Split regex that does not compile.
  EXPECT_HAS(error_of([] {
               BpeModel::parse_tokenizer_json(R"({"model": {"type": "BPE"}, "normalizer": {"type": "Lowercase"}, "pre_tokenizer":
                                                 {"type": "ByteLevel"}})",
                                              "tokenizer.json");
             }),
             "tokenizer.json: normalizer: is \"Lowercase\", which ctxsim does not apply");
  EXPECT_HAS(error_of([] {
               BpeModel::parse_tokenizer_json(
                   R"({"model": {"type": "BPE", "byte_fallback": true}, "pre_tokenizer": {"type": "ByteLevel"}})", "tokenizer.json");
             }),
             "tokenizer.json: model.byte_fallback: is true");
  // A post-processor that would change ids beyond SPEC §7's frame is named, never dropped: an
  // unknown one (also inside a Sequence), a template with a second sequence or a literal piece,
  // a special token of two ids. Framing ones pass (Llama 2's TemplateProcessing, Llama 3's ByteLevel).
  const auto post = [](const std::string& processor) {
    return error_of([&] {
      BpeModel::parse_tokenizer_json(
          R"({"model": {"type": "BPE"}, "pre_tokenizer": {"type": "ByteLevel"}, "post_processor": )" + processor + "}", "tokenizer.json");
    });
  };
  EXPECT_HAS(post(R"({"type": "Truncate"})"), "tokenizer.json: post_processor: is \"Truncate\", which ctxsim does not apply");
  EXPECT_HAS(post(R"({"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "Lowercase"}]})"),
             "tokenizer.json: post_processor.processors[1]: is \"Lowercase\"");
  EXPECT_HAS(post(R"({"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A"}}, {"Sequence": {"id": "A"}}]})"),
             "post_processor.single: does not hold the sequence A once");
  EXPECT_HAS(post(R"({"type": "TemplateProcessing", "single": [{"Literal": "x"}, {"Sequence": {"id": "A"}}]})"),
             "which is neither a special token nor the sequence A");
  EXPECT_HAS(post(R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}],
                      "special_tokens": {"<s>": {"id": "<s>", "ids": [1, 2], "tokens": ["<s>", "x"]}}})"),
             "post_processor.special_tokens: \"<s>\": adds 2 ids");
  EXPECT_EQ(post(R"({"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "TemplateProcessing", "single":
                      [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}], "special_tokens": {"<s>": {"ids": [1]}}}]})")
                .find("post_processor"),
            std::string::npos);
  EXPECT_HAS(error_of([] {
               BpeModel::parse_tokenizer_json(R"({"model": {"type": "BPE"}, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                 {"type": "Split", "pattern": {"Regex": "(?i:a"}, "behavior": "Isolated"}, {"type": "ByteLevel", "use_regex": false}]}})",
                                              "tokenizer.json");
             }),
             "tokenizer.json: pre_tokenizer.pretokenizers[0].pattern.Regex: does not compile");
}

// Llama 2's sentencepiece-style BPE, by hand: "ab é zz" is normalised to "▁ab▁é▁zz" and merged a
// word at a time: ▁ a b -> ▁a b (rank 0) -> ▁ab (rank 1); é has no token: its UTF-8 bytes' <0xC3>
// <0xA9>; z has neither a token nor byte tokens: <unk>, the two fused into one.
TEST(SentencePieceStyle, PrependReplaceMergeByteFallbackAndUnknown) {
  nlohmann::json j;
  j["normalizer"] = {
      {"type", "Sequence"},
      {"normalizers",
       {{{"type", "Prepend"}, {"prepend", "\u2581"}}, {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}};
  j["pre_tokenizer"] = nullptr;
  j["model"] = {
      {"type", "BPE"},
      {"unk_token", "<unk>"},
      {"fuse_unk", true},
      {"byte_fallback", true},
      {"merges", {"\u2581 a", "\u2581a b"}},
      {"vocab", {{"<unk>", 0}, {"\u2581", 1}, {"a", 2}, {"b", 3}, {"\u2581a", 4}, {"\u2581ab", 5}, {"<0xC3>", 6}, {"<0xA9>", 7}}}};
  BpeTokenizer t(BpeModel::parse_tokenizer_json(j.dump(), "tokenizer.json"));
  EXPECT_STREQ(t.kind(), "sentencepiece-style BPE");
  Encoding e;
  t.encode("ab \xc3\xa9 zz", e);
  EXPECT_EQ(e.ids, (std::vector<int32_t>{5, 1, 6, 7, 1, 0}));
  EXPECT_EQ(e.word_ids, (std::vector<int32_t>{0, 1, 1, 1, 2, 2}));  // a word starts at a token that starts with ▁
  // Decoded as Llama 2's decoder does: ▁ a space, <0xNN> its byte (the unknown stays <unk>).
  EXPECT_EQ(t.decode(e.ids.data(), e.ids.size()), " ab \xc3\xa9 <unk>");
  // Without Llama 2's normalizer, byte_fallback is refused by name.
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "ByteLevel"}};
  EXPECT_HAS(error_of([&] { BpeModel::parse_tokenizer_json(j.dump(), "tokenizer.json"); }), "model.byte_fallback: is true without");
}

// The Metaspace pre-tokenizer (Mistral v0.3's tokenizer.json), by hand on the vocabulary above with
// an added token <s>: " ab<s>ab" has ▁ already (no second one), and with prepend_scheme "first"
// the segment after <s> gets none; "always" gives it one; split makes "▁▁ab" the pieces ▁ and ▁ab,
// so ▁▁ (the first merge here) is not made across them.
TEST(SentencePieceStyle, MetaspacePreTokenizerPrependsAsItsSchemeSays) {
  nlohmann::json j;
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"}, {"split", false}};
  j["model"] = {
      {"type", "BPE"},
      {"unk_token", "<unk>"},
      {"byte_fallback", true},
      {"merges", {"\u2581 \u2581", "\u2581 a", "\u2581a b", "a b"}},
      {"vocab", {{"<unk>", 0}, {"\u2581", 1}, {"a", 2}, {"b", 3}, {"\u2581a", 4}, {"\u2581ab", 5}, {"ab", 6}, {"\u2581\u2581", 7}}}};
  j["added_tokens"] = {{{"id", 8}, {"content", "<s>"}, {"special", true}, {"normalized", false}}};
  const auto ids = [&](const std::string& text) {
    BpeTokenizer t(BpeModel::parse_tokenizer_json(j.dump(), "tokenizer.json"));
    Encoding e;
    t.encode(text, e);
    return e.ids;
  };
  EXPECT_EQ(ids(" ab<s>ab"), (std::vector<int32_t>{5, 8, 6}));
  EXPECT_EQ(ids("ab<s>ab"), (std::vector<int32_t>{5, 8, 6}));
  EXPECT_EQ(ids("<s>ab"), (std::vector<int32_t>{8, 6}));  // not at the text's start
  EXPECT_EQ(ids("  ab"), (std::vector<int32_t>{7, 6}));   // one piece: ▁ ▁ merges first (rank 0)
  j["pre_tokenizer"]["prepend_scheme"] = "always";
  EXPECT_EQ(ids("<s>ab"), (std::vector<int32_t>{8, 5}));
  j["pre_tokenizer"]["prepend_scheme"] = "never";
  EXPECT_EQ(ids("ab ab"), (std::vector<int32_t>{6, 5}));
  j["pre_tokenizer"]["prepend_scheme"] = "first";
  j["pre_tokenizer"]["split"] = true;
  EXPECT_EQ(ids("  ab"), (std::vector<int32_t>{1, 5}));  // pieces ▁ and ▁ab
  j["pre_tokenizer"]["prepend_scheme"] = "sometimes";
  EXPECT_HAS(error_of([&] { ids("a"); }), "tokenizer.json: pre_tokenizer.prepend_scheme: is \"sometimes\"");
  j["pre_tokenizer"]["prepend_scheme"] = "first";
  j["pre_tokenizer"]["replacement"] = "_";
  EXPECT_HAS(error_of([&] { ids("a"); }), "tokenizer.json: pre_tokenizer.replacement: is \"_\", not");
}

TEST(ByteLevelFiles, TokenizerJsonReadsBothMergeSpellings) {
  nlohmann::json j;
  j["model"] = {{"type", "BPE"}, {"vocab", nlohmann::json::parse(vocab_json({"ab", "abc"}))}};
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", nlohmann::json::array({nlohmann::json{{"type", "ByteLevel"}}})}};
  j["model"]["merges"] = {"a b", {"ab", "c"}};  // "a b" (older) and ["ab", "c"] (tokenizers >= 0.20)
  BpeTokenizer t(BpeModel::parse_tokenizer_json(j.dump(), "tokenizer.json"));
  EXPECT_EQ(t.encode("abcab").ids, (std::vector<int32_t>{257, 256}));
}

// Added tokens (the tokenizers library's): matched in the text before the pre-tokenizer, leftmost
// then longest, never merged, each a word; lstrip/rstrip take the whitespace beside them.
// vocab.json + merges.txt get GPT-2's <|endoftext|>, or RoBERTa's five when the vocabulary has <s>
// and </s> (where <|endoftext|> is an ordinary token).
TEST(ByteLevel, AddedTokensAreMatchedFirstAndNeverMerged) {
  const auto id = [](const BpeTokenizer& t, const char* token) { return t.vocab().id(token); };
  BpeTokenizer gpt2 = tiny({"<|endoftext|>"}, "");
  const int32_t eot = id(gpt2, "<|endoftext|>");
  Encoding e = gpt2.encode("a<|endoftext|><|endoftext|> b<|endoftext");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{'a', eot, eot, id(gpt2, "\u0120"), 'b', '<', '|', 'e', 'n', 'd', 'o', 'f', 't', 'e', 'x', 't'}));
  EXPECT_EQ(e.word_ids, (std::vector<int32_t>{0, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3}));
  EXPECT_EQ(e.num_words, 4);

  BpeTokenizer roberta = tiny({"<s>", "</s>", "<mask>", "<|endoftext|>"}, "");
  EXPECT_EQ(roberta.encode("<s>x</s>").ids, (std::vector<int32_t>{id(roberta, "<s>"), 'x', id(roberta, "</s>")}));
  EXPECT_EQ(roberta.encode("<|endoftext|>").ids.size(), 13u);  // not RoBERTa's: its bytes

  nlohmann::json j;
  j["model"] = {{"type", "BPE"}, {"vocab", nlohmann::json::parse(vocab_json({"<mask>", "</s>"}))}, {"merges", nlohmann::json::array()}};
  j["pre_tokenizer"] = {{"type", "ByteLevel"}};
  j["added_tokens"] = {{{"id", 256}, {"content", "<mask>"}, {"lstrip", true}, {"rstrip", false}},
                       {{"id", 257}, {"content", "</s>"}, {"lstrip", false}, {"rstrip", true}}};
  BpeTokenizer flags(BpeModel::parse_tokenizer_json(j.dump(), "tokenizer.json"));
  const int32_t space = id(flags, "\u0120");
  EXPECT_EQ(flags.encode("a \u3000 <mask> b").ids, (std::vector<int32_t>{'a', 256, space, 'b'}));  // lstrip takes U+3000 too
  EXPECT_EQ(flags.encode("a </s>  b").ids, (std::vector<int32_t>{'a', space, 257, 'b'}));
  // Hostile added tokens: an id that is another token, one past the next free id, a single_word token.
  j["added_tokens"] = {{{"id", 10}, {"content", "<mask>"}}};
  EXPECT_HAS(error_of([&] { BpeModel::parse_tokenizer_json(j.dump(), "t.json"); }),
             "t.json: added_tokens[0]: '<mask>' with id 10 is neither that token of model.vocab nor the next id after it (258)");
  j["added_tokens"] = {{{"id", 259}, {"content", "<mask>"}}};
  EXPECT_HAS(error_of([&] { BpeModel::parse_tokenizer_json(j.dump(), "t.json"); }), "nor the next id after it (258)");
  // Added tokens past model.vocab (Llama 3's) extend the vocabulary, matched first.
  j["added_tokens"] = {{{"id", 258}, {"content", "<|bot|>"}}, {{"id", 259}, {"content", "<|eot|>"}}};
  BpeTokenizer extended(BpeModel::parse_tokenizer_json(j.dump(), "t.json"));
  EXPECT_EQ(extended.vocab_size(), 260);
  EXPECT_EQ(extended.encode("<|bot|>a<|eot|>").ids, (std::vector<int32_t>{258, 'a', 259}));
  j["added_tokens"] = {{{"id", 256}, {"content", "<mask>"}, {"single_word", true}}};
  EXPECT_HAS(error_of([&] { BpeModel::parse_tokenizer_json(j.dump(), "t.json"); }), "matches single words only");
}

TEST(ByteLevelFiles, TheFolderDecidesTheTokenizer) {
  test::TempDir d;
  d.write("bpe/vocab.json", vocab_json({"ab"}));
  d.write("bpe/merges.txt", "#version: 0.2\na b\n");
  d.write("wp/vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nab\n");
  d.write("half/vocab.json", "{}");
  EXPECT_STREQ(open_tokenizer((d.path / "bpe").string(), {})->kind(), "byte-level BPE");
  EXPECT_STREQ(open_tokenizer((d.path / "wp").string(), {})->kind(), "WordPiece");
  EXPECT_STREQ(open_tokenizer((d.path / "wp/vocab.txt").string(), {})->kind(), "WordPiece");
  EXPECT_HAS(error_of([&] { open_tokenizer((d.path / "half").string(), {}); }), "has vocab.json but no merges.txt");
  EXPECT_HAS(error_of([&] { open_tokenizer((d.path / "none").string(), {}); }), "does not exist");
}

// ------------------------------------------------------------ GPT-2's real files --------
constexpr const char* kGpt2 = "data/vocab/gpt2";

class Gpt2Files : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(std::string(kGpt2) + "/merges.txt"))
      GTEST_SKIP() << "needs GPT-2's vocab.json and merges.txt: run scripts/setup.sh (or scripts/fetch_data.sh)";
  }
};

TEST_F(Gpt2Files, KnownIds) {
  auto t = open_tokenizer(kGpt2, {});
  EXPECT_EQ(t->vocab_size(), 50257);
  EXPECT_EQ(t->encode("Hello world").ids, (std::vector<int32_t>{15496, 995}));
  EXPECT_EQ(t->encode(" the").ids, (std::vector<int32_t>{262}));
  EXPECT_EQ(t->tokens(t->encode("Hello world, it's").ids), (std::vector<std::string>{"Hello", "Ġworld", ",", "Ġit", "'s"}));
}

// A window's sentence is " " + text (SPEC §7): its first word is a word like any other, and decode
// gives the text back (a character cut between tokens becomes U+FFFD, not invalid UTF-8).
TEST_F(Gpt2Files, SampleFrameTokenizesWithAPrefixSpace) {
  auto t = open_tokenizer(kGpt2, {});
  const SampleFrame frame{50256, -1, 50256, true, {50256}};
  const Encoding e = frame.encode(*t, "Hello world, it's");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{18435, 995, 11, 340, 338}));
  EXPECT_EQ(e.word_ids, (std::vector<int32_t>{0, 1, 1, 2, 2}));
  EXPECT_EQ(e.num_words, 3);
  EXPECT_EQ(t->decode(e.ids.data(), e.ids.size()), " Hello world, it's");
  const std::vector<int32_t> emoji = t->encode("\xF0\x9F\x98\x80").ids;  // one character, several byte tokens
  ASSERT_GT(emoji.size(), 1u);
  EXPECT_EQ(t->decode(emoji.data(), emoji.size()), "\xF0\x9F\x98\x80");
  EXPECT_EQ(t->decode(emoji.data(), 1), "\xEF\xBF\xBD");
}

// Every Brown sentence's tokens, mapped back through the byte table, spell its bytes.
TEST_F(Gpt2Files, TokensSpellTheTextBack) {
  CTXSIM_REQUIRE_DATA();
  std::map<char32_t, uint8_t> byte_of;
  for (int b = 0; b < 256; ++b) byte_of[byte_to_unicode(uint8_t(b))] = uint8_t(b);
  BpeTokenizer t(BpeModel::load(std::string(kGpt2) + "/vocab.json", std::string(kGpt2) + "/merges.txt"));
  CorpusOptions o;
  o.path = test::kBrownPath;
  o.max_documents = 40;
  const Corpus corpus = read_corpus(o);
  int64_t sentences = 0;
  for (const auto& d : corpus.documents)
    for (const auto& s : d.sentences) {
      const std::string text = " " + s;
      std::string back;
      for (const auto& token : t.tokens(t.encode(text).ids)) {
        size_t i = 0;
        while (i < token.size()) back += char(byte_of.at(utf8::next(token, i)));
      }
      ASSERT_EQ(back, text);
      ++sentences;
    }
  EXPECT_GT(sentences, 2000);
}

}  // namespace
}  // namespace ctxsim
