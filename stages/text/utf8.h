// UTF-8 decoding and validation for corpus text (RFC 3629: no overlongs, no surrogates,
// nothing above U+10FFFF). Knows nothing of files beyond the name used in messages.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ctxsim::utf8 {

constexpr size_t npos = static_cast<size_t>(-1);

// Byte offset of the first invalid sequence in `s`, or npos when `s` is valid UTF-8.
size_t find_invalid(std::string_view s);

// Whether `s` starts with a UTF-8 byte-order mark (EF BB BF), which a line-based token file would
// take into its first token or line.
inline bool starts_with_bom(std::string_view s) { return s.substr(0, 3) == "\xEF\xBB\xBF"; }
// The fix for such a file.
constexpr const char* kBomFix = "save it as UTF-8 without a byte-order mark (e.g. sed -i '1s/^\\xEF\\xBB\\xBF//' FILE)";

// `s` with every invalid sequence replaced by U+FFFD (the maximal-subpart rule of Unicode §3.9).
std::string replace_invalid(std::string_view s);

// Decodes one code point at s[i] (which must be valid UTF-8) and advances i past it.
inline char32_t next(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  if (b0 < 0xE0) {
    char32_t c = ((b0 & 0x1Fu) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3Fu);
    i += 2;
    return c;
  }
  if (b0 < 0xF0) {
    char32_t c =
        ((b0 & 0x0Fu) << 12) | ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 6) | (static_cast<unsigned char>(s[i + 2]) & 0x3Fu);
    i += 3;
    return c;
  }
  char32_t c = ((b0 & 0x07u) << 18) | ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 12) |
               ((static_cast<unsigned char>(s[i + 2]) & 0x3Fu) << 6) | (static_cast<unsigned char>(s[i + 3]) & 0x3Fu);
  i += 4;
  return c;
}

// Appends the UTF-8 encoding of code point c.
inline void append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

// Unicode normalization form C of valid UTF-8 `s` (utf8proc), as the tokenizers library's NFC
// normalizer.
std::string nfc(std::string_view s);

// "line L, column C (byte B)" for byte offset `offset` of `s`: for error messages.
std::string describe_offset(std::string_view s, size_t offset);

}  // namespace ctxsim::utf8
