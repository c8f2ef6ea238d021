// Digests and encodings through OpenSSL: SHA-256 of bytes, of a file, or of a stream of pieces
// (the identity of a run's inputs, the integrity of a store's statistics), and base64 (data:
// URIs, Content-Security-Policy hashes). No LibTorch.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace ctxsim {

// SHA-256 fed piece by piece; hex() or raw() ends it.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256& update(const void* data, size_t n);
  Sha256& update(std::string_view bytes) { return update(bytes.data(), bytes.size()); }
  // A length-prefixed piece, so that ("ab", "c") and ("a", "bc") differ.
  Sha256& update_field(std::string_view bytes);
  std::string raw();  // the 32 bytes
  std::string hex();  // 64 lowercase hex digits

 private:
  struct Context;
  std::unique_ptr<Context> ctx_;
};

std::string sha256_bytes(const uint8_t* data, size_t n);  // hex
std::string sha256_file(const std::string& path);         // hex, streamed; throws ctxsim::Error naming the file

// Standard base64 (RFC 4648, with padding).
std::string base64(std::string_view bytes);

}  // namespace ctxsim
