#include "stages/text/corpus.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/text/utf8.h"

namespace fs = std::filesystem;

namespace ctxsim {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// The file's text as valid UTF-8, or an error naming the byte offset.
std::string read_text_file(const fs::path& p, InvalidUtf8 policy) {
  std::string content = read_file_bytes(p.string(), size_t(-1), "a corpus file", "point corpus.path at the corpus's text files");
  const size_t bad = utf8::find_invalid(content);
  if (bad == utf8::npos) return content;
  if (policy == InvalidUtf8::Replace) return utf8::replace_invalid(content);
  throw Error(p.string(), "invalid UTF-8 at " + utf8::describe_offset(content, bad),
              "convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8) or set "
              "corpus.invalid_utf8: replace");
}

// Collapses whitespace runs to one space and trims.
std::string normalise_space(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool pending = false;
  for (char c : s) {
    if (is_space(c)) {
      pending = !out.empty();
    } else {
      if (pending) out.push_back(' ');
      pending = false;
      out.push_back(c);
    }
  }
  return out;
}

bool is_brown_name(const std::string& n) {
  return n.size() == 4 && n[0] == 'c' && n[1] >= 'a' && n[1] <= 'r' && std::isdigit(static_cast<unsigned char>(n[2])) &&
         std::isdigit(static_cast<unsigned char>(n[3]));
}

// The folder's files in name order; what is not a file (a dangling link, a folder) goes to skipped.
std::vector<fs::path> sorted_files(const fs::path& dir, std::vector<std::string>& skipped) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file(ec))
      files.push_back(e.path());
    else
      skipped.push_back(e.path().filename().string() + (e.is_symlink(ec) ? " (a link to nothing readable)" : " (not a file)"));
  }
  std::sort(files.begin(), files.end());
  std::sort(skipped.begin(), skipped.end());
  return files;
}

// Lower-case abbreviations (without their final '.') after which '.' does not end a sentence.
bool is_abbreviation(std::string_view w) {
  static const std::array<std::string_view, 48> kAbbrev = {
      "mr",  "mrs",  "ms",  "dr",  "prof", "sr",   "jr",  "st",  "vs",  "etc",    "inc",  "ltd", "co",  "corp", "no",  "nos",
      "fig", "figs", "gen", "gov", "sen",  "rep",  "rev", "col", "lt",  "capt",   "sgt",  "mt",  "ft",  "jan",  "feb", "mar",
      "apr", "jun",  "jul", "aug", "sep",  "sept", "oct", "nov", "dec", "approx", "dept", "est", "vol", "pp",   "cf",  "al"};
  std::string low(w);
  for (auto& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::find(kAbbrev.begin(), kAbbrev.end(), low) != kAbbrev.end();
}

bool is_closing(char c) { return c == '"' || c == '\'' || c == ')' || c == ']' || c == '}'; }
bool is_opening(char c) { return c == '"' || c == '\'' || c == '(' || c == '[' || c == '{'; }

}  // namespace

std::string CorpusNotes::describe() const {
  std::vector<std::string> parts;
  if (nul_bytes) parts.push_back(std::to_string(nul_bytes) + " NUL byte(s) dropped (as BERT's text cleaning does)");
  if (untagged_tokens) parts.push_back(std::to_string(untagged_tokens) + " Brown token(s) without a /tag kept whole as words");
  if (!skipped.empty()) {
    std::vector<std::string> first(skipped.begin(), skipped.begin() + long(std::min<size_t>(5, skipped.size())));
    parts.push_back(std::to_string(skipped.size()) + " folder entr" + (skipped.size() == 1 ? "y" : "ies") + " skipped: " + join(first) +
                    (skipped.size() > 5 ? ", …" : ""));
  }
  return join(parts, "; ");
}

int64_t Corpus::num_sentences() const {
  int64_t n = 0;
  for (const auto& d : documents) n += static_cast<int64_t>(d.sentences.size());
  return n;
}

std::vector<std::string> parse_brown(std::string_view content, int64_t* untagged) {
  std::vector<std::string> sentences;
  for (const std::string& text : split_lines(content)) {
    const std::string_view line = text;  // views of the line, not copies
    std::string sentence;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && is_space(line[i])) ++i;
      size_t j = i;
      while (j < line.size() && !is_space(line[j])) ++j;
      if (j > i) {
        std::string_view token = line.substr(i, j - i);
        const size_t slash = token.rfind('/');
        const bool tagged = slash != std::string_view::npos && slash != 0;
        if (!tagged && untagged) ++*untagged;
        std::string_view word = tagged ? token.substr(0, slash) : token;
        if (word == "``" || word == "''") word = "\"";
        if (!sentence.empty()) sentence.push_back(' ');
        sentence.append(word);
      }
      i = j;
    }
    if (!sentence.empty()) sentences.push_back(std::move(sentence));
  }
  return sentences;
}

std::vector<std::string> split_sentences(std::string_view raw) {
  const std::string text = normalise_space(raw);
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t p = 0; p < text.size(); ++p) {
    const char c = text[p];
    if (c != '.' && c != '?' && c != '!') continue;
    size_t q = p;
    while (q < text.size() && (text[q] == '.' || text[q] == '?' || text[q] == '!')) ++q;
    const bool single_dot = q == p + 1 && c == '.';
    while (q < text.size() && is_closing(text[q])) ++q;
    if (q < text.size() && text[q] != ' ') {
      p = q - 1;
      continue;
    }  // "3.14", "e.g.," ...
    if (single_dot) {
      // A single '.' (possibly closed by quotes): look at the word it ends.
      size_t w = p;
      while (w > start && text[w - 1] != ' ') --w;
      while (w < p && is_opening(text[w])) ++w;
      const std::string_view word(text.data() + w, p - w);
      const bool initial = word.size() == 1 && std::isalpha(static_cast<unsigned char>(word[0]));
      const bool dotted = word.find('.') != std::string_view::npos;  // "U.S", "e.g", "a.m"
      if (word.empty() || initial || dotted || is_abbreviation(word)) {
        p = q - 1;
        continue;
      }
    }
    std::string s = text.substr(start, q - start);
    if (!s.empty()) out.push_back(std::move(s));
    start = q < text.size() ? q + 1 : q;
    p = q - 1;
  }
  if (start < text.size()) out.push_back(text.substr(start));
  return out;
}

std::vector<std::string> split_documents(std::string_view text) {
  std::vector<std::string> docs;
  std::string current;
  size_t pos = 0;
  const auto flush = [&] {
    if (!current.empty()) docs.push_back(std::move(current));
    current.clear();
  };
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    const bool blank = std::all_of(line.begin(), line.end(), is_space);
    if (blank) {
      flush();
    } else {
      if (!current.empty()) current.push_back('\n');
      current.append(line);
    }
    pos = end + 1;
  }
  flush();
  return docs;
}

void parse_jsonl(std::string_view content, const std::string& file, const std::string& text_field,
                 const std::function<bool(const std::string&, std::vector<std::string>)>& on_document) {
  size_t pos = 0;
  int64_t line_no = 0;
  while (pos < content.size()) {
    size_t end = content.find('\n', pos);
    if (end == std::string_view::npos) end = content.size();
    const std::string_view line = content.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (std::all_of(line.begin(), line.end(), is_space)) continue;
    const std::string where = file + ":" + std::to_string(line_no);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw Error(where, std::string("malformed JSON: ") + e.what(), "write one JSON object per line (JSON lines)");
    }
    if (!j.is_object()) throw Error(where, "expected a JSON object per line", "write one JSON object per line");
    const auto it = j.find(text_field);
    if (it == j.end()) throw Error(where, "no member '" + text_field + "'", "set corpus.text_field to the member that holds the text");
    if (!it->is_string())
      throw Error(where, "member '" + text_field + "' is not a string", "set corpus.text_field to the member that holds the text");
    if (!on_document(where, split_sentences(it->get<std::string>()))) return;
  }
}

Corpus read_corpus(const CorpusOptions& o) {
  const fs::path root(o.path);
  if (!fs::exists(root))
    throw Error(o.path, "the corpus path does not exist",
                "set corpus.path to an existing file or folder (scripts/setup.sh fetches the Brown corpus into data/brown)");
  Corpus corpus;
  const auto want_more = [&] { return o.max_documents <= 0 || static_cast<int64_t>(corpus.documents.size()) < o.max_documents; };
  const auto add = [&](std::string name, std::vector<std::string> sentences) {
    if (!sentences.empty() && want_more()) corpus.documents.push_back(Document{std::move(name), std::move(sentences)});
  };

  std::vector<fs::path> files;
  if (fs::is_directory(root)) {
    for (auto& f : sorted_files(root, corpus.notes.skipped))
      if (o.format != CorpusFormat::Brown || is_brown_name(f.filename().string())) files.push_back(f);
  } else {
    files.push_back(root);
  }

  Sha256 digest;  // what the results depend on: the files read, by name and content
  for (const auto& f : files) {
    if (!want_more()) break;
    corpus.files.push_back(f.string());
    const std::string content = read_text_file(f, o.invalid_utf8);
    digest.update_field(f.filename().string()).update_field(content);
    corpus.notes.nul_bytes += std::count(content.begin(), content.end(), '\0');
    switch (o.format) {
      case CorpusFormat::Brown: add(f.filename().string(), parse_brown(content, &corpus.notes.untagged_tokens)); break;
      case CorpusFormat::Text: {
        int index = 0;
        for (auto& d : split_documents(content)) add(f.filename().string() + "#" + std::to_string(index++), split_sentences(d));
        break;
      }
      case CorpusFormat::Jsonl:
        parse_jsonl(content, f.string(), o.text_field, [&](const std::string& where, std::vector<std::string> sentences) {
          add(where, std::move(sentences));
          return want_more();  // lines past max_documents are not read
        });
        break;
    }
  }
  if (corpus.documents.empty()) {
    const std::string expect =
        o.format == CorpusFormat::Brown ? "Brown files named ca01 … cr09 with `word/tag` tokens" : "non-empty UTF-8 text";
    throw Error(o.path, "the corpus has no documents (read " + std::to_string(files.size()) + " file(s); expected " + expect + ")",
                "point corpus.path at the corpus, or set corpus.format to match it");
  }
  corpus.sha256 = digest.hex();
  return corpus;
}

}  // namespace ctxsim
