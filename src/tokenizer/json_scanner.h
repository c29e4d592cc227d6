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

#include "util/json.h"
#include "util/status.h"

namespace fgemma::tokenizer_internal {

class JsonScanner {
 public:
  JsonScanner(std::string_view text, std::string what, int max_depth = kDefaultJsonMaxDepth)
      : text_(text), what_(std::move(what)), max_depth_(max_depth) {}

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
  // Containers deeper than `max_depth` (counted from the document's top) are refused when opened.
  template <typename F>
  Status ForEachMember(F&& on_member) {
    FGEMMA_RETURN_IF_ERROR(Open('{'));
    const Status status = Members(on_member);
    --depth_;
    return status;
  }

  // Reads an array; `on_element(index)` must consume each element.
  template <typename F>
  Status ForEachElement(F&& on_element) {
    FGEMMA_RETURN_IF_ERROR(Open('['));
    const Status status = Elements(on_element);
    --depth_;
    return status;
  }

 private:
  // Expects `bracket` and enters one more level of nesting, refusing it past max_depth_. The depth
  // is kept here, where every container is opened, because SkipValue recurses through
  // ForEachMember/ForEachElement: this bound is what keeps a hostile file from overflowing the stack.
  Status Open(char bracket);

  template <typename F>
  Status Members(F& on_member) {
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

  template <typename F>
  Status Elements(F& on_element) {
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

  Status SkipNumber();
  Status ReadEscape(std::string& out);
  Status ReadHex4(uint32_t& out);

  std::string_view text_;
  std::string what_;
  std::string field_;
  size_t pos_ = 0;
  int max_depth_;
  int depth_ = 0;  // containers open around the current position
};

}  // namespace fgemma::tokenizer_internal
