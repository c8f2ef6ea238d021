// Corpus readers on fixtures written by the tests, and the real Brown corpus.
#include "stages/text/corpus.h"

#include <gtest/gtest.h>

#include "stages/base/error.h"
#include "test_helpers.h"

namespace ctxsim {
namespace {

std::string error_of(const CorpusOptions& o) {
  try {
    read_corpus(o);
  } catch (const Error& e) { return e.what(); }
  return "";
}

TEST(Brown, ParsesWordTagTokens) {
  const std::string file =
      "\n\n\tThe/at Fulton/np-tl jury/nn said/vbd ``/`` no/at ''/'' ./.\n\n\n"
      "\t1-1/2/cd AT&T/np isn't/bez* here/rb ./.\n\n";
  const auto s = parse_brown(file);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0], "The Fulton jury said \" no \" .");
  // The word is the text before the LAST '/': "1-1/2/cd" -> "1-1/2".
  EXPECT_EQ(s[1], "1-1/2 AT&T isn't here .");
}

TEST(Brown, ReadsOnlyDocumentFilesInNameOrder) {
  test::TempDir dir;
  dir.write("cb01", "\tSecond/ap file/nn ./.\n");
  dir.write("ca01", "\tFirst/ap ./.\n\n\tTwo/cd ./.\n");
  dir.write("README", "not a document\n");
  dir.write("cats.txt", "ca01 news\n");
  dir.write("CONTENTS", "x\n");
  CorpusOptions o;
  o.path = dir.path.string();
  const Corpus c = read_corpus(o);
  ASSERT_EQ(c.documents.size(), 2u);
  EXPECT_EQ(c.documents[0].name, "ca01");
  EXPECT_EQ(c.documents[0].sentences, (std::vector<std::string>{"First .", "Two ."}));
  EXPECT_EQ(c.documents[1].name, "cb01");
  EXPECT_EQ(c.num_sentences(), 3);
  o.max_documents = 1;
  EXPECT_EQ(read_corpus(o).documents.size(), 1u);
}

TEST(Brown, RealCorpusShape) {
  CTXSIM_REQUIRE_DATA();
  CorpusOptions o;
  o.path = test::kBrownPath;
  const Corpus c = read_corpus(o);
  EXPECT_EQ(c.documents.size(), 500u);
  EXPECT_EQ(c.documents.front().name, "ca01");
  EXPECT_EQ(c.documents.back().name, "cr09");
  EXPECT_EQ(c.num_sentences(), 57340);
  EXPECT_EQ(c.documents[0].sentences[0].substr(0, 40), "The Fulton County Grand Jury said Friday");
}

TEST(SentenceSplit, SplitsOnTerminatorsFollowedBySpace) {
  EXPECT_EQ(split_sentences("One. Two? Three! Four"), (std::vector<std::string>{"One.", "Two?", "Three!", "Four"}));
  EXPECT_EQ(split_sentences("He said \"stop.\" Then left."), (std::vector<std::string>{"He said \"stop.\"", "Then left."}));
  EXPECT_EQ(split_sentences("Really?! Yes."), (std::vector<std::string>{"Really?!", "Yes."}));
}

TEST(SentenceSplit, KeepsAbbreviationsInitialsAndDecimals) {
  EXPECT_EQ(split_sentences("Mr. Smith met Dr. Jones. They talked."),
            (std::vector<std::string>{"Mr. Smith met Dr. Jones.", "They talked."}));
  EXPECT_EQ(split_sentences("Use e.g. this, i.e. that. Done."), (std::vector<std::string>{"Use e.g. this, i.e. that.", "Done."}));
  EXPECT_EQ(split_sentences("The U.S. Army grew. It cost 3.5 billion."),
            (std::vector<std::string>{"The U.S. Army grew.", "It cost 3.5 billion."}));
  EXPECT_EQ(split_sentences("J. R. R. Tolkien wrote. Yes."), (std::vector<std::string>{"J. R. R. Tolkien wrote.", "Yes."}));
}

TEST(SentenceSplit, NormalisesWhitespace) {
  EXPECT_EQ(split_sentences("  A  line\nbroken.\n\tNext  one.  "), (std::vector<std::string>{"A line broken.", "Next one."}));
  EXPECT_TRUE(split_sentences(" \n ").empty());
}

TEST(TextCorpus, DocumentsSeparatedByBlankLines) {
  test::TempDir dir;
  const auto p = dir.write("t.txt", "First doc. Second sentence.\n\n \nSecond doc\nspans lines.\n");
  CorpusOptions o;
  o.format = CorpusFormat::Text;
  o.path = p;
  const Corpus c = read_corpus(o);
  ASSERT_EQ(c.documents.size(), 2u);
  EXPECT_EQ(c.documents[0].sentences, (std::vector<std::string>{"First doc.", "Second sentence."}));
  EXPECT_EQ(c.documents[1].sentences, (std::vector<std::string>{"Second doc spans lines."}));
}

TEST(TextCorpus, InvalidUtf8NamesFileAndOffsetOrIsReplaced) {
  test::TempDir dir;
  const auto p = dir.write("bad.txt", "ok line\nbad \xFF byte. Next.\n");
  CorpusOptions o;
  o.format = CorpusFormat::Text;
  o.path = p;
  const std::string msg = error_of(o);
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 2, column 5 (byte 12)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("corpus.invalid_utf8: replace"), std::string::npos) << msg;
  o.invalid_utf8 = InvalidUtf8::Replace;
  const Corpus c = read_corpus(o);
  ASSERT_EQ(c.documents.size(), 1u);
  EXPECT_EQ(c.documents[0].sentences[0], "ok line bad \xEF\xBF\xBD byte.");
}

TEST(JsonlCorpus, ReadsTextFieldPerLine) {
  test::TempDir dir;
  const auto p = dir.write("w.jsonl", "{\"title\": \"A\", \"body\": \"One. Two.\"}\n\n{\"body\": \"Three.\"}\n");
  CorpusOptions o;
  o.format = CorpusFormat::Jsonl;
  o.path = p;
  o.text_field = "body";
  const Corpus c = read_corpus(o);
  ASSERT_EQ(c.documents.size(), 2u);
  EXPECT_EQ(c.documents[0].sentences, (std::vector<std::string>{"One.", "Two."}));
  EXPECT_EQ(c.documents[1].name, p + ":3");
}

TEST(JsonlCorpus, ErrorsNameFileAndLine) {
  test::TempDir dir;
  CorpusOptions o;
  o.format = CorpusFormat::Jsonl;
  o.path = dir.write("a.jsonl", "{\"text\": \"ok.\"}\n{\"text\": oops}\n");
  EXPECT_NE(error_of(o).find("a.jsonl:2: malformed JSON"), std::string::npos) << error_of(o);
  o.path = dir.write("b.jsonl", "{\"body\": \"x\"}\n");
  EXPECT_NE(error_of(o).find("b.jsonl:1: no member 'text'"), std::string::npos) << error_of(o);
  o.path = dir.write("c.jsonl", "{\"text\": 5}\n");
  EXPECT_NE(error_of(o).find("is not a string"), std::string::npos) << error_of(o);
  o.path = dir.write("d.jsonl", "[1, 2]\n");
  EXPECT_NE(error_of(o).find("expected a JSON object"), std::string::npos) << error_of(o);
  // A number too large for a double is JSON's out_of_range, not a parse error (found by fuzzing).
  o.path = dir.write("e.jsonl", "{\"text\": \"ok.\"}\n" + std::string(400, '6') + "\n");
  EXPECT_NE(error_of(o).find("e.jsonl:2: malformed JSON"), std::string::npos) << error_of(o);
}

TEST(Corpus, MissingAndEmptyCorpora) {
  test::TempDir dir;
  CorpusOptions o;
  o.path = (dir.path / "nope").string();
  EXPECT_NE(error_of(o).find("does not exist"), std::string::npos);
  o.path = dir.path.string();  // a folder with no Brown files
  dir.write("notes.txt", "hello\n");
  EXPECT_NE(error_of(o).find("no documents"), std::string::npos) << error_of(o);
  o.format = CorpusFormat::Text;
  o.path = dir.write("empty.txt", "\n\n  \n");
  EXPECT_NE(error_of(o).find("no documents"), std::string::npos) << error_of(o);
}

}  // namespace
}  // namespace ctxsim
