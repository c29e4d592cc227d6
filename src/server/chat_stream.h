// The assistant message of a chat completion, built token by token as the model generates it: the
// deltas of a streamed response (`stream: true`), and the partial message of a response cut by
// max_tokens.
//
// FunctionGemma's turn is either a text answer or a run of calls (chat/call_grammar.h). Text is
// streamed as `delta.content` as soon as it is certain to be part of the answer: whole UTF-8
// characters only, and never a '<' that may still turn out to start an end-of-turn or call marker
// (held until the marker is complete or ruled out). A call is streamed when its
// <end_function_call> arrives: the output so far is parsed against the declared tools (exactly
// what the final parse does with the whole output) and each newly completed call gives two
// deltas, `{index, id, type, function:{name, arguments:""}}` then `{index, function:{arguments}}`.
// Complete() then adds whatever the finished response holds beyond what was streamed, so the
// concatenated deltas equal the response's message.
#pragma once

#include <string>
#include <vector>

#include "chat/request.h"
#include "server/openai_format.h"
#include "tokenizer/tokenizer.h"
#include "util/json.h"

namespace fgemma::server {

class ChatStream {
 public:
  // `tools` must outlive the stream.
  ChatStream(const Tokenizer& tokenizer, const std::vector<Tool>& tools, ResponseMeta meta);

  // Consumes one generated token; appends the deltas it completes (often none) to *deltas.
  // Fails only on an id outside the vocabulary.
  Status Push(int32_t id, std::vector<Json>* deltas);
  // The deltas that, after those already produced, make the streamed message equal `message`
  // (a response's choices[0].message): the calls not streamed yet and the rest of the content.
  std::vector<Json> Complete(const Json& message);
  // choices[0].message of a response cut short (finish_reason "length"): the calls completed so
  // far, or else the text generated so far (whole characters); what Complete() would stream.
  Json PartialMessage() const;

  size_t tokens() const { return tokens_; }
  // What has been streamed: the content and the number of calls.
  const std::string& streamed_content() const { return content_; }
  size_t streamed_calls() const { return calls_sent_; }

 private:
  // Offset in text_ up to which text is certainly content (before any marker).
  size_t ContentEnd(bool final) const;
  void AppendCallDeltas(size_t index, const std::string& name, const std::string& arguments, const std::vector<std::string>& errors,
                        std::vector<Json>* deltas);

  StreamDecoder decoder_;
  const std::vector<Tool>& tools_;
  ResponseMeta meta_;
  std::string text_;         // the output decoded so far (whole characters)
  std::string content_;      // content streamed so far
  size_t calls_sent_ = 0;
  size_t tokens_ = 0;
};

}  // namespace fgemma::server
