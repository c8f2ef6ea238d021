// Samples (SPEC §1): SplitMix64 and the draw by hand, window packing, truncation, padding,
// sentence and word ids, both window modes; the draw that tokenizes only what it takes against
// the one that tokenizes the whole corpus; and the real Brown corpus end to end.
#include "stages/text/samples.h"

#include <gtest/gtest.h>

#include <tuple>

#include "stages/base/error.h"
#include "test_helpers.h"

namespace ctxsim {
namespace {

TEST(SplitMix64, ReferenceOutputsForSeedZero) {
  // The published first outputs of SplitMix64 seeded with 0.
  SplitMix64 r(0);
  EXPECT_EQ(r.next(), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(r.next(), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(r.next(), 0x06C45D188009454Full);
}

TEST(Draw, HandComputedSmallCases) {
  // n=3, k=1, seed 0: i=2: j = 0xE220A8397B1DCDAF mod 3 = 1 -> [0,2,1];
  // i=1: j = 0x6E789E6AA1B965F4 mod 2 = 0 -> [2,0,1]; keep the first 1 -> {2}.
  EXPECT_EQ(draw_candidates(3, 1, 0), (std::vector<int64_t>{2}));
  // n=5, k=2, seed 42: j = 3, 3, 0, 0 for i = 4..1 -> [1,2,0,4,3] -> {1,2}.
  EXPECT_EQ(draw_candidates(5, 2, 42), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(draw_candidates(10, 4, 7), (std::vector<int64_t>{1, 5, 8, 9}));
}

TEST(Draw, AllWhenAskingForAtLeastN) {
  EXPECT_EQ(draw_candidates(4, 4, 1), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(draw_candidates(4, 100, 1), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(Draw, SortedDistinctAndSeedDependent) {
  const auto a = draw_candidates(1000, 100, 42), b = draw_candidates(1000, 100, 43);
  EXPECT_EQ(a.size(), 100u);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(std::adjacent_find(a.begin(), a.end()), a.end());
  EXPECT_NE(a, b);
  EXPECT_EQ(a, draw_candidates(1000, 100, 42));
}

// Sentences of given lengths; token ids encode (sentence, position) as 1000*s + 10 + i,
// each token its own word except where `two_token_words` pairs them up.
TokenizedDocument make_doc(const std::vector<int>& lengths, int first_sentence_id = 0) {
  TokenizedDocument d;
  for (size_t s = 0; s < lengths.size(); ++s) {
    TokenizedSentence t;
    for (int i = 0; i < lengths[s]; ++i) {
      t.ids.push_back(static_cast<int32_t>(1000 * (first_sentence_id + s) + 10 + i));
      t.word_ids.push_back(i / 2);  // two tokens per word
    }
    t.num_words = (lengths[s] + 1) / 2;
    d.sentences.push_back(t);
  }
  return d;
}

const SampleFrame kSpecial{101, 102, 0, false, {}};
const SampleFrame kWordPiece{};  // tokenizing: no prefix space (the ids are not used)

struct Row {
  std::vector<int32_t> tok;
  std::vector<int16_t> sent, word;
  int16_t n_valid = 0;
  bool truncated = false;
};

Row window(const TokenizedDocument& d, int first, int T, const SampleFrame& frame = kSpecial) {
  Row r;
  r.tok.resize(T);
  r.sent.resize(T);
  r.word.resize(T);
  r.truncated = build_window(d, first, T, frame, r.tok.data(), r.sent.data(), r.word.data(), r.n_valid);
  return r;
}

// SPEC §7's frames: GPT-2's `<|endoftext|> w…` padded with <|endoftext|> (invalid), room T-1;
// RoBERTa's `<s> w… </s> <pad>…`, room T-2.
const SampleFrame kGpt2Frame{50256, -1, 50256, true, {50256}};
const SampleFrame kRobertaFrame{0, 2, 1, true, {0, 1, 2, 3, 50261}};

TEST(Window, DecoderFrameHasNoEndToken) {
  // T=9 leaves 8 tokens after <|endoftext|>: sentence 0 (3) and 1 (4) whole, sentence 2 cut to 1.
  Row r = window(make_doc({3, 4, 5}), 0, 9, kGpt2Frame);
  EXPECT_EQ(r.tok, (std::vector<int32_t>{50256, 10, 11, 12, 1010, 1011, 1012, 1013, 2010}));
  EXPECT_EQ(r.sent, (std::vector<int16_t>{-1, 0, 0, 0, 1, 1, 1, 1, 2}));
  EXPECT_EQ(r.n_valid, 9);
  EXPECT_TRUE(r.truncated);
  // The document's end: the padding repeats <|endoftext|>, and only the words are valid after it.
  r = window(make_doc({3, 2}), 0, 9, kGpt2Frame);
  EXPECT_EQ(r.tok, (std::vector<int32_t>{50256, 10, 11, 12, 1010, 1011, 50256, 50256, 50256}));
  EXPECT_EQ(r.sent, (std::vector<int16_t>{-1, 0, 0, 0, 1, 1, -1, -1, -1}));
  EXPECT_EQ(r.word, (std::vector<int16_t>{-1, 0, 0, 1, 2, 2, -1, -1, -1}));
  EXPECT_EQ(r.n_valid, 6);
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(kGpt2Frame.room(128), 127);
  EXPECT_EQ(kRobertaFrame.room(128), 126);
}

TEST(Window, RobertaFrame) {
  const Row r = window(make_doc({3, 2}), 0, 9, kRobertaFrame);
  EXPECT_EQ(r.tok, (std::vector<int32_t>{0, 10, 11, 12, 1010, 1011, 2, 1, 1}));
  EXPECT_EQ(r.sent, (std::vector<int16_t>{-1, 0, 0, 0, 1, 1, -1, -1, -1}));
  EXPECT_EQ(r.n_valid, 7);
}

TEST(Frame, ResolvedFromTheVocabularyWithClearErrors) {
  const Vocab v = Vocab::from_tokens({"<s>", "<pad>", "</s>", "<unk>", "hello", "<mask>"});
  const SampleFrame f = SampleFrame::resolve({"<s>", "</s>", "<pad>", {"<s>", "<pad>", "</s>", "<unk>", "<mask>"}}, v, true, "RoBERTa");
  EXPECT_EQ(f.begin, 0);
  EXPECT_EQ(f.end, 2);
  EXPECT_EQ(f.pad, 1);
  EXPECT_EQ(f.specials, (std::vector<int32_t>{0, 1, 2, 3, 5}));
  EXPECT_TRUE(f.is_special(5));
  EXPECT_FALSE(f.is_special(4));
  try {
    SampleFrame::resolve({"<|endoftext|>", nullptr, "<|endoftext|>", {"<|endoftext|>"}}, v, true, "GPT-2");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("it lacks <|endoftext|>, the token that starts every GPT-2 sample"), std::string::npos)
        << e.what();
  }
}

TEST(Window, WholeSentencesThenCutAndPadding) {
  // T=10 leaves 8 tokens: sentence 0 (3) and 1 (4) fit whole, sentence 2 is cut to 1.
  const Row r = window(make_doc({3, 4, 5}), 0, 10);
  EXPECT_EQ(r.tok, (std::vector<int32_t>{101, 10, 11, 12, 1010, 1011, 1012, 1013, 2010, 102}));
  EXPECT_EQ(r.sent, (std::vector<int16_t>{-1, 0, 0, 0, 1, 1, 1, 1, 2, -1}));
  // Words numbered across the sample: s0 has words 0,0,1; s1 continues at 2.
  EXPECT_EQ(r.word, (std::vector<int16_t>{-1, 0, 0, 1, 2, 2, 3, 3, 4, -1}));
  EXPECT_EQ(r.n_valid, 10);
  EXPECT_TRUE(r.truncated);
}

TEST(Window, DocumentEndIsPadded) {
  const Row r = window(make_doc({3, 4, 2}), 1, 12);
  EXPECT_EQ(r.tok, (std::vector<int32_t>{101, 1010, 1011, 1012, 1013, 2010, 2011, 102, 0, 0, 0, 0}));
  EXPECT_EQ(r.sent, (std::vector<int16_t>{-1, 0, 0, 0, 0, 1, 1, -1, -1, -1, -1, -1}));
  EXPECT_EQ(r.n_valid, 8);
  EXPECT_FALSE(r.truncated);
}

TEST(Window, ExactFitIsNotATruncation) {
  // 8 tokens of room filled exactly by two sentences; the third is not started.
  const Row r = window(make_doc({4, 4, 3}), 0, 10);
  EXPECT_EQ(r.n_valid, 10);
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(r.tok[8], 1013);
  EXPECT_EQ(r.tok[9], 102);
}

TEST(Window, FirstSentenceLongerThanWindow) {
  const Row r = window(make_doc({20}), 0, 6);
  EXPECT_EQ(r.tok, (std::vector<int32_t>{101, 10, 11, 12, 13, 102}));
  EXPECT_TRUE(r.truncated);
}

TokenizedCorpus make_corpus() {
  TokenizedCorpus c;
  c.documents = {make_doc({3, 4, 5}), make_doc({2}), make_doc({1, 1, 1, 1, 1})};
  return c;
}

TEST(Candidates, SentenceAndDocumentModes) {
  const auto c = make_corpus();
  SampleOptions o;
  auto cand = enumerate_candidates(c, o);
  ASSERT_EQ(cand.size(), 9u);  // 3 + 1 + 5 sentence starts
  EXPECT_EQ(cand[3].document, 1);
  EXPECT_EQ(cand[4].document, 2);
  EXPECT_EQ(cand[8].sentence, 4);
  o.stride_sentences = 2;  // sentences 0, 2 of doc 0; 0 of doc 1; 0, 2, 4 of doc 2
  cand = enumerate_candidates(c, o);
  ASSERT_EQ(cand.size(), 6u);
  EXPECT_EQ(cand[1].sentence, 2);
  EXPECT_EQ(cand[5].sentence, 4);
  o.windows = WindowMode::Documents;
  cand = enumerate_candidates(c, o);
  ASSERT_EQ(cand.size(), 3u);
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(cand[d].document, d);
    EXPECT_EQ(cand[d].sentence, 0);
  }
}

TEST(BuildSamples, DrawPicksTheHandComputedCandidates) {
  const auto c = make_corpus();
  SampleOptions o;
  o.seq_len = 8;
  o.num_samples = 4;
  o.seed = 7;
  const SampleSet s = build_samples(c, o, kSpecial);
  ASSERT_EQ(s.size(), 4);
  // The draw itself is checked by hand above; here: drawn candidate -> (document, sentence).
  const auto drawn = draw_candidates(9, 4, 7);
  EXPECT_EQ(s.candidate, drawn);
  const auto cand = enumerate_candidates(c, o);
  for (int n = 0; n < 4; ++n) {
    EXPECT_EQ(s.source[n].document, cand[drawn[n]].document);
    EXPECT_EQ(s.source[n].sentence, cand[drawn[n]].sentence);
    EXPECT_EQ(s.token_ids[n * 8], 101);
  }
  EXPECT_EQ(s.shortfall(), 0);
  o.num_samples = 50;
  const SampleSet all = build_samples(c, o, kSpecial);
  EXPECT_EQ(all.size(), 9);
  EXPECT_EQ(all.shortfall(), 41);
  // Windows of 6 tokens of room: doc 0 from sentence 0 (3+4 > 6: cut), from 1 (4, then 5 cut),
  // from 2 (5 fits); doc 1 fits; doc 2 (five 1-token sentences) fits from every start.
  EXPECT_EQ(all.truncated_sentences, 2);
}

TEST(BuildSamples, EmptyCorpusIsAnError) {
  TokenizedCorpus c;
  c.documents.resize(2);
  EXPECT_THROW(build_samples(c, SampleOptions{}, kSpecial), Error);
}

void expect_same_samples(const SampleSet& a, const SampleSet& b) {
  EXPECT_EQ(a.seq_len, b.seq_len);
  EXPECT_EQ(a.token_ids, b.token_ids);
  EXPECT_EQ(a.sentence_ids, b.sentence_ids);
  EXPECT_EQ(a.word_ids, b.word_ids);
  EXPECT_EQ(a.n_valid, b.n_valid);
  ASSERT_EQ(a.source.size(), b.source.size());
  for (size_t n = 0; n < a.source.size(); ++n) {
    EXPECT_EQ(a.source[n].document, b.source[n].document) << "sample " << n;
    EXPECT_EQ(a.source[n].sentence, b.source[n].sentence) << "sample " << n;
  }
  EXPECT_EQ(a.candidate, b.candidate);
  EXPECT_EQ(a.num_candidates, b.num_candidates);
  EXPECT_EQ(a.requested, b.requested);
  EXPECT_EQ(a.truncated_sentences, b.truncated_sentences);
}

BertTokenizer small_tokenizer() {
  return BertTokenizer(
      Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "a", "##s", ".", ",", "e", "中"}),
      TokenizerOptions{});
}

// Sentences that give no token: controls, a lone combining accent (stripped), a zero-width
// space (format character, cleaned), U+FFFD; and some that do, ASCII or not.
const std::vector<std::string> kEdgeSentences = {
    "\x01\x7f",  "\xcc\x81", " \xcc\x81 \xcc\x81", "\xe2\x80\x8b", "\xef\xbf\xbd",         "\t", "a", "\xc3\xa9",
    "x\xcc\x81", "[SEP]",    "\xe4\xb8\xad",       "\x01a",        "\xcc\x81\xe2\x80\x8b,"};

TEST(LazyDraw, YieldsTokensAgreesWithTheTokenizer) {
  BertTokenizer tok = small_tokenizer();
  for (const std::string& s : kEdgeSentences) EXPECT_EQ(yields_tokens(s, tok, kWordPiece), !tok.encode(s).ids.empty()) << "'" << s << "'";
  EXPECT_FALSE(yields_tokens("\xcc\x81", tok, kWordPiece));
  EXPECT_FALSE(yields_tokens("\x01\x7f", tok, kWordPiece));
  EXPECT_TRUE(yields_tokens("\xc3\xa9", tok, kWordPiece));  // é: the accent goes, e stays
  for (int c = 1; c < 128; ++c) {
    const std::string s(1, static_cast<char>(c));
    EXPECT_EQ(yields_tokens(s, tok, kWordPiece), !tok.encode(s).ids.empty()) << "byte " << c;
  }
}

TEST(LazyDraw, SameSamplesAsTokenizingTheWholeCorpus) {
  Corpus corpus;
  const auto doc = [&](std::vector<std::string> sentences) { corpus.documents.push_back(Document{"d", std::move(sentences)}); };
  doc({"the cat sat on the mat .", "\xcc\x81", "a cat , a mat", "cats sat", "\x01", "the the the the the the the the the the the"});
  doc({"\xe2\x80\x8b"});  // no sentence gives a token: no candidate
  doc(kEdgeSentences);
  doc({"cat", "\xef\xbf\xbd", "mat", "sat .", "on", "a", "the"});
  doc({"\xe4\xb8\xad\xe4\xb8\xad \xc3\xa9t\xc3\xa9 on the mat"});
  BertTokenizer whole = small_tokenizer(), lazy = small_tokenizer();
  const TokenizedCorpus tokenized = tokenize_corpus(corpus, whole, kWordPiece);
  const SentenceIndex index = index_sentences(corpus, lazy, kWordPiece);
  EXPECT_EQ(index.sentences, tokenized.num_sentences);
  EXPECT_EQ(index.dropped, tokenized.dropped_sentences);
  ASSERT_EQ(index.kept.size(), 5u);
  EXPECT_EQ(index.kept[0], (std::vector<int32_t>{0, 2, 3, 5}));
  EXPECT_TRUE(index.kept[1].empty());
  for (int32_t T : {3, 5, 8, 16, 64})
    for (int32_t stride : {1, 2, 3})
      for (WindowMode mode : {WindowMode::Sentences, WindowMode::Documents})
        for (int64_t num : {1, 4, 100})
          for (int64_t heldout : {0, 2}) {
            SampleOptions o;
            o.seq_len = T;
            o.stride_sentences = stride;
            o.windows = mode;
            o.num_samples = num;
            o.seed = uint64_t(T * 131 + stride);
            o.documents = {heldout ? DocumentSplit::Train : DocumentSplit::All, heldout};
            SCOPED_TRACE("T=" + std::to_string(T) + " stride=" + std::to_string(stride) + " num=" + std::to_string(num) +
                         " documents mode=" + std::to_string(mode == WindowMode::Documents) + " heldout=" + std::to_string(heldout));
            expect_same_samples(draw_samples(corpus, index, lazy, o, kSpecial), build_samples(tokenized, o, kSpecial));
          }
  // The same errors: no candidate at all.
  Corpus empty;
  empty.documents.push_back(Document{"d", {"\x01"}});
  EXPECT_THROW(draw_samples(empty, index_sentences(empty, lazy, kWordPiece), lazy, SampleOptions{}, kSpecial), Error);
}

TEST(BrownSamples, RealCorpusDefaultDraw) {
  CTXSIM_REQUIRE_DATA();
  CorpusOptions co;
  co.path = test::kBrownPath;
  const Corpus corpus = read_corpus(co);
  BertTokenizer tok(Vocab::load(test::kVocabPath), TokenizerOptions{});
  const TokenizedCorpus tc = tokenize_corpus(corpus, tok, SampleFrame::wordpiece(tok.vocab()));
  EXPECT_EQ(tc.num_sentences, 57340);
  SampleOptions o;
  o.num_samples = 2000;
  const SampleSet s = build_samples(tc, o, SampleFrame::wordpiece(tok.vocab()));
  // The run's draw, which tokenizes only the windows it takes, gives the same samples.
  BertTokenizer lazy(Vocab::load(test::kVocabPath), TokenizerOptions{});
  const SentenceIndex index = index_sentences(corpus, lazy, kWordPiece);
  EXPECT_EQ(index.sentences, 57340);
  EXPECT_EQ(index.dropped, tc.dropped_sentences);
  expect_same_samples(draw_samples(corpus, index, lazy, o, SampleFrame::wordpiece(tok.vocab())), s);
  for (const auto& [T, stride, mode] :
       {std::tuple{64, 3, WindowMode::Sentences}, std::tuple{512, 1, WindowMode::Sentences}, std::tuple{128, 1, WindowMode::Documents}}) {
    SampleOptions other = o;
    other.seq_len = T;
    other.stride_sentences = stride;
    other.windows = mode;
    other.seed = 7;
    expect_same_samples(draw_samples(corpus, index, lazy, other, SampleFrame::wordpiece(tok.vocab())),
                        build_samples(tc, other, SampleFrame::wordpiece(tok.vocab())));
  }
  ASSERT_EQ(s.size(), 2000);
  EXPECT_EQ(s.num_candidates, 57340);
  const size_t T = 128;
  for (int64_t n = 0; n < s.size(); ++n) {
    const auto* tokp = &s.token_ids[n * T];
    const auto* sent = &s.sentence_ids[n * T];
    const int v = s.n_valid[n];
    ASSERT_GE(v, 3);
    EXPECT_EQ(tokp[0], 101);
    EXPECT_EQ(tokp[v - 1], 102);
    EXPECT_EQ(sent[1], 0);  // a window starts at a sentence start
    for (int i = 1; i < v - 1; ++i) {
      ASSERT_GE(sent[i], sent[i - 1]);      // sentence ids never decrease
      ASSERT_LE(sent[i] - sent[i - 1], 1);  // and never skip
      ASSERT_NE(tokp[i], 0);
    }
    for (size_t i = v; i < T; ++i) ASSERT_EQ(tokp[i], 0);
  }
}

}  // namespace
}  // namespace ctxsim
