#include "stages/base/digest.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "stages/base/error.h"
#include "stages/base/files.h"

namespace ctxsim {
namespace {

std::string to_hex(std::string_view raw) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (unsigned char c : raw) {
    s.push_back(digits[c >> 4]);
    s.push_back(digits[c & 15]);
  }
  return s;
}

[[noreturn]] void openssl_failed(const char* call) {
  throw Error("sha256", std::string("OpenSSL ") + call + " failed", "check the OpenSSL installation");
}

}  // namespace

struct Sha256::Context {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256() : ctx_(std::make_unique<Context>()) {
  if (!ctx_->ctx || EVP_DigestInit_ex(ctx_->ctx, EVP_sha256(), nullptr) != 1) openssl_failed("EVP_DigestInit_ex");
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

Sha256& Sha256::update(const void* data, size_t n) {
  if (n > 0 && EVP_DigestUpdate(ctx_->ctx, data, n) != 1) openssl_failed("EVP_DigestUpdate");
  return *this;
}

Sha256& Sha256::update_field(std::string_view bytes) {
  const uint64_t n = bytes.size();
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
  return update(len, sizeof len).update(bytes);
}

std::string Sha256::raw() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_->ctx, digest, &len) != 1) openssl_failed("EVP_DigestFinal_ex");
  return std::string(reinterpret_cast<const char*>(digest), len);
}

std::string Sha256::hex() { return to_hex(raw()); }

std::string sha256_bytes(const uint8_t* data, size_t n) { return Sha256().update(data, n).hex(); }

std::string sha256_file(const std::string& path) {
  Sha256 h;
  read_regular_file(path, "the file", "check the path and permissions", [&](std::string_view bytes) { h.update(bytes); });
  return h.hex();
}

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(bytes.data()),
                                int(bytes.size()));
  out.resize(size_t(n));
  return out;
}

}  // namespace ctxsim
