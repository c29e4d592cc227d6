// A validating, allocation-light JSON reader for tokenizer.json. nlohmann's DOM for a 14 MB file with
// a 262,144-entry object and 514,906 two-string arrays takes far longer than the load budget, so the
// big arrays are read with this scanner straight from the mapped file, while small sections are cut
// out as raw text (RawValue) and handed to nlohmann. Every error names the file, the field being read
// and the byte offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/status.h"

namespace fgemma::tokenizer_internal {

class JsonScanner {
 public:
  JsonScanner(std::string_view text, std::string what) : text_(text), what_(std::move(what)) {}

  // Names the field being read in later error messages ("model.vocab").
  void set_field(std::string field) { field_ = std::move(field); }
  size_t offset() const { return pos_; }
  Status Error(const std::string& message) const;

  // Next non-whitespace character without consuming it; '\0' at the end of the text.
  char Peek();
  Status Expect(char c);
  Status ReadString(std::string& out);    // replaces `out`
  Status AppendString(std::string& out);  // appends to `out`
  Status ReadInt(int64_t& out);
  Status ReadBool(bool& out);
  Status SkipValue();
  // Skips one value and returns its exact text.
  Status RawValue(std::string_view& out);
  // After the whole document: only whitespace may remain.
  Status ExpectEnd();

  // Reads an object; `on_member(key)` must consume the member's value. Returns its first error.
  template <typename F>
  Status ForEachMember(F&& on_member) {
    FGEMMA_RETURN_IF_ERROR(Expect('{'));
    if (Peek() == '}') return Expect('}');
    std::string key;
    for (;;) {
      FGEMMA_RETURN_IF_ERROR(ReadString(key));
      FGEMMA_RETURN_IF_ERROR(Expect(':'));
      FGEMMA_RETURN_IF_ERROR(on_member(static_cast<const std::string&>(key)));
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      return Expect('}');
    }
  }

  // Reads an array; `on_element(index)` must consume each element.
  template <typename F>
  Status ForEachElement(F&& on_element) {
    FGEMMA_RETURN_IF_ERROR(Expect('['));
    if (Peek() == ']') return Expect(']');
    for (size_t index = 0;; ++index) {
      FGEMMA_RETURN_IF_ERROR(on_element(index));
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      return Expect(']');
    }
  }

 private:
  Status SkipValueAt(int depth);
  Status SkipNumber();
  Status ReadEscape(std::string& out);
  Status ReadHex4(uint32_t& out);

  std::string_view text_;
  std::string what_;
  std::string field_;
  size_t pos_ = 0;
};

}  // namespace fgemma::tokenizer_internal
