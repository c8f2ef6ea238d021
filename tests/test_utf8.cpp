// UTF-8 validation: the offsets reported for each class of invalid sequence, and replacement.
#include "stages/text/utf8.h"

#include <gtest/gtest.h>

#include "stages/base/error.h"

namespace ctxsim {
namespace {

TEST(Utf8, ValidTextHasNoInvalidOffset) {
  EXPECT_EQ(utf8::find_invalid(""), utf8::npos);
  EXPECT_EQ(utf8::find_invalid("plain ascii text that is longer than eight bytes"), utf8::npos);
  EXPECT_EQ(utf8::find_invalid("caf\xC3\xA9 \xE5\x8C\x97 \xF0\x9F\x98\x80"), utf8::npos);  // é 北 😀
}

TEST(Utf8, EachInvalidClassAtItsOffset) {
  EXPECT_EQ(utf8::find_invalid("abc\xFF"), 3u);              // never-valid byte
  EXPECT_EQ(utf8::find_invalid("ab\x80"), 2u);               // lone continuation
  EXPECT_EQ(utf8::find_invalid("a\xC0\xAF"), 1u);            // overlong '/'
  EXPECT_EQ(utf8::find_invalid("a\xE0\x80\xAF"), 1u);        // overlong 3-byte
  EXPECT_EQ(utf8::find_invalid("ab\xED\xA0\x80"), 2u);       // UTF-16 surrogate
  EXPECT_EQ(utf8::find_invalid("\xF4\x90\x80\x80"), 0u);     // above U+10FFFF
  EXPECT_EQ(utf8::find_invalid("abcdefghij\xC3"), 10u);      // truncated at the end
  EXPECT_EQ(utf8::find_invalid("abcdefghij\xE5\x8C"), 10u);  // truncated 3-byte
}

TEST(Utf8, ReplacementUsesMaximalSubparts) {
  EXPECT_EQ(utf8::replace_invalid("a\xFF"
                                  "b"),
            "a\xEF\xBF\xBD"
            "b");
  // A truncated 3-byte sequence is one maximal subpart: one U+FFFD, then the next character.
  EXPECT_EQ(utf8::replace_invalid("\xE5\x8C"
                                  "b"),
            "\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(utf8::replace_invalid("ok"), "ok");
}

TEST(Utf8, DescribeOffsetGivesLineAndColumn) { EXPECT_EQ(utf8::describe_offset("ab\ncd\xFF", 5), "line 2, column 3 (byte 5)"); }

TEST(Utf8, DecodeAndAppendRoundTrip) {
  const std::string s = "a\xC3\xA9\xE5\x8C\x97\xF0\x9F\x98\x80";
  std::string out;
  std::vector<char32_t> cps;
  for (size_t i = 0; i < s.size();) cps.push_back(utf8::next(s, i));
  EXPECT_EQ(cps, (std::vector<char32_t>{U'a', 0xE9, 0x5317, 0x1F600}));
  for (auto c : cps) utf8::append(out, c);
  EXPECT_EQ(out, s);
}

}  // namespace
}  // namespace ctxsim

// An error quoting a user's NUL byte or line break stays one whole line, its fix included.
TEST(ErrorMessage, QuotedNulAndLineBreaksKeepTheFix) {
  const ctxsim::Error e("f.txt", std::string("token 'a\0b\nc'", 13), "use another file");
  EXPECT_STREQ(e.what(), "f.txt: token 'a\\0b\\nc'; fix: use another file");
}
