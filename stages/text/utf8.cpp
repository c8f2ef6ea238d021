#include "stages/text/utf8.h"

#include <utf8proc.h>

#include <cstdlib>

#include "stages/base/error.h"

namespace ctxsim::utf8 {
namespace {

// Length of the valid sequence starting at s[i], or 0 if invalid; on 0, `bad_len` holds the
// length of the maximal invalid subpart (at least 1) to replace by one U+FFFD.
size_t valid_length(std::string_view s, size_t i, size_t& bad_len) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = at(i);
  bad_len = 1;
  if (b0 < 0x80) return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 == 0xE0) {
    need = 3;
    lo = 0xA0;
  } else if (b0 >= 0xE1 && b0 <= 0xEC) {
    need = 3;
  } else if (b0 == 0xED) {
    need = 3;
    hi = 0x9F;
  }  // no UTF-16 surrogates
  else if (b0 >= 0xEE && b0 <= 0xEF) {
    need = 3;
  } else if (b0 == 0xF0) {
    need = 4;
    lo = 0x90;
  } else if (b0 >= 0xF1 && b0 <= 0xF3) {
    need = 4;
  } else if (b0 == 0xF4) {
    need = 4;
    hi = 0x8F;
  }  // nothing above U+10FFFF
  else
    return 0;
  for (size_t k = 1; k < need; ++k) {
    if (i + k >= s.size()) {
      bad_len = k;
      return 0;
    }
    const unsigned char b = at(i + k);
    const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (b < l || b > h) {
      bad_len = k;
      return 0;
    }
  }
  return need;
}

}  // namespace

size_t find_invalid(std::string_view s) {
  size_t i = 0, bad = 0;
  while (i < s.size()) {
    // ASCII fast path: eight bytes at a time.
    while (i + 8 <= s.size()) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= s.size()) break;
    const size_t n = valid_length(s, i, bad);
    if (n == 0) return i;
    i += n;
  }
  return npos;
}

std::string replace_invalid(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0, bad = 0;
  while (i < s.size()) {
    const size_t n = valid_length(s, i, bad);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      i += bad;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

std::string describe_offset(std::string_view s, size_t offset) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < offset && i < s.size(); ++i) {
    if (s[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col) + " (byte " + std::to_string(offset) + ")";
}

std::string nfc(std::string_view s) {
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), utf8proc_ssize_t(s.size()), &out,
                                          utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  CTXSIM_CHECK(n >= 0, std::string("NFC of valid UTF-8 failed: ") + utf8proc_errmsg(n));
  std::string composed(reinterpret_cast<const char*>(out), size_t(n));
  std::free(out);
  return composed;
}

}  // namespace ctxsim::utf8
