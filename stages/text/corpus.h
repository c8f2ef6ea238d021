// Corpus readers: Brown (gold sentences), plain text and JSON lines (rule-based sentence
// split). They turn files into documents of sentence strings; nothing here tokenizes.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ctxsim {

struct Document {
  std::string name;                    // where it came from: "ca01", "wiki.jsonl:17"
  std::vector<std::string> sentences;  // UTF-8, whitespace-normalised, never empty strings
};

enum class CorpusFormat { Brown, Text, Jsonl };
enum class InvalidUtf8 { Error, Replace };

struct CorpusOptions {
  CorpusFormat format = CorpusFormat::Brown;
  std::string path;                 // folder (brown, text) or file (text, jsonl)
  std::string text_field = "text";  // jsonl: the member holding a document's text
  InvalidUtf8 invalid_utf8 = InvalidUtf8::Error;
  int64_t max_documents = 0;  // 0 = all; else the first N documents in corpus order
};

// Content that was read but is not used as it stands, said once in the log (describe()).
struct CorpusNotes {
  int64_t nul_bytes = 0;             // NUL bytes: BERT's text cleaning (ours too) drops them
  int64_t untagged_tokens = 0;       // Brown tokens without a /tag: kept whole as words
  std::vector<std::string> skipped;  // folder entries that are not files (dangling links, folders)
  std::string describe() const;      // "" when there is nothing to say
};

struct Corpus {
  std::vector<Document> documents;  // corpus order
  std::vector<std::string> files;   // the files read, in order
  CorpusNotes notes;
  std::string sha256;  // of the files read: each one's name (in the folder) and bytes, in order
  int64_t num_sentences() const;
};

// Reads a whole corpus. Throws ctxsim::Error naming the file (and line or byte offset) for
// missing paths, invalid UTF-8 (unless options say replace), malformed JSON and empty corpora.
Corpus read_corpus(const CorpusOptions& options);

// One Brown file (`word/tag` tokens, one sentence per line) into its sentences (SPEC §1).
// untagged (optional) counts the tokens without a /tag, which are kept whole.
std::vector<std::string> parse_brown(std::string_view content, int64_t* untagged = nullptr);

// JSON lines: each non-blank line an object whose `text_field` member is a document's text.
// Calls on_document(file:line, its sentences) per line in order, until it returns false. Throws
// naming file:line.
void parse_jsonl(std::string_view content, const std::string& file, const std::string& text_field,
                 const std::function<bool(const std::string&, std::vector<std::string>)>& on_document);

// Rule-based sentence split on `.` `?` `!` (plus closing quotes/brackets) followed by
// whitespace or the end; keeps abbreviations ("Mr.", "e.g.", "U.S."), initials ("J.") and
// decimals together. Whitespace runs become single spaces.
std::vector<std::string> split_sentences(std::string_view text);

// Plain-text documents: separated by one or more blank lines.
std::vector<std::string> split_documents(std::string_view text);

}  // namespace ctxsim
