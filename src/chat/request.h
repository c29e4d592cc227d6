// Chat requests in the OpenAI / Hugging Face shape: `tools` (function declarations with JSON-Schema
// parameters) and `messages` (developer or system, user, assistant with tool_calls, tool responses),
// parsed into structs with validation. Errors name the field: "messages[3].content: ...".
//
// The request also keeps the JSON it was parsed from (key order intact): the renderer reads that,
// because the official template's output depends on exact keys and values (`description` printed
// even when absent, enum printed only for strings, ...), not on a normalized form.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_json.h"
#include "chat/schema.h"
#include "util/status.h"

namespace fgemma {

// Limits on what a client controls, shared by the CLI, the C API and the server, each checked before
// the work it bounds (docs/input-limits.md). Schema limits are in chat/schema.h.
inline constexpr size_t kMaxTools = 1024;                   // functions in `tools`, counted first
inline constexpr size_t kMaxMessages = 4096;                // entries of `messages`, counted first
// Content of all messages together (1 MiB): texts, call names and arguments, tool results (the
// bytes of their strings and keys).
inline constexpr size_t kMaxMessageBytes = 1u << 20;

struct Tool {
  std::string name;
  std::string description;
  Schema parameters;  // always an object schema; an absent or empty `parameters` takes no arguments
};

enum class Role { kSystem, kDeveloper, kUser, kAssistant, kTool };
const char* RoleName(Role role);

struct ToolCall {
  std::string id;          // optional in the request ("" when absent)
  std::string name;
  OrderedJson arguments;   // an object; or a string when a client sent JSON text (kTemplateInput only)
};

// One function result in a tool message, whichever of the template's three shapes carried it.
struct ToolResult {
  std::string name;
  OrderedJson response;    // an object, or a string (rendered as {value:<escape>...<escape>})
};

struct Message {
  Role role = Role::kUser;
  std::string text;                      // text content (parts concatenated), untrimmed; "" if none
  bool has_content = false;              // content was given and not null
  std::vector<ToolCall> tool_calls;      // assistant only
  std::vector<ToolResult> tool_results;  // tool only
  std::string name;                      // tool messages: the function name, when given
  std::string tool_call_id;
};

struct ChatRequest {
  std::vector<Tool> tools;
  std::vector<Message> messages;
  // From the request's optional `add_generation_prompt` (default true: a prompt to generate from).
  bool add_generation_prompt = true;
  // What the renderer reads: `tools` (null when absent) and `messages` as given, except for the
  // OpenAI conversions described at RequestFormat::kOpenAI.
  OrderedJson tools_json;
  OrderedJson messages_json;
  // Accepted but doubtful, e.g. two tools with one name (the template renders both).
  std::vector<std::string> warnings;

  const Tool* FindTool(std::string_view name) const;
};

enum class RequestFormat {
  // kOpenAI when the body has a "model" member, kTemplateInput otherwise.
  kAuto,
  // `{tools, messages, add_generation_prompt?}`: the arguments of apply_chat_template, rendered as
  // given (a tool call whose arguments are a string is printed raw, as the template does).
  kTemplateInput,
  // A chat-completions body. Tool call `arguments` arrive as JSON text and are decoded to objects
  // (the template would print the text verbatim after 20 spaces); a tool message without `name`
  // takes the function name of the earlier tool call its `tool_call_id` answers, and text parts of
  // tool content are joined into one string.
  kOpenAI,
};

Result<ChatRequest> ParseChatRequest(const OrderedJson& body, RequestFormat format = RequestFormat::kAuto);
// Parses JSON text first; `what` names the source in errors (a path, "request body").
Result<ChatRequest> ParseChatRequestText(std::string_view text, const std::string& what,
                                         RequestFormat format = RequestFormat::kAuto);

// A tool catalog: an array of {"type":"function","function":{...}}, at most kMaxTools of them
// (counted before any is parsed). `path` prefixes errors. A name declared twice (found with a hash
// set, in linear time) is accepted (the template renders both declarations; FindTool and the call
// parser use the first) and noted in *warnings when given.
Result<std::vector<Tool>> ParseTools(const OrderedJson& tools, const std::string& path = "tools",
                                     std::vector<std::string>* warnings = nullptr);

}  // namespace fgemma
