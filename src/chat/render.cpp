// A native port of FunctionGemma's official chat template. Each function below corresponds to one
// macro or block of the template and follows it statement by statement, with jinja2's semantics
// from jinja_values.h (Undefined for missing keys, Python printing, case-insensitive dictsort), so
// that odd-but-accepted inputs render exactly as apply_chat_template renders them. The whitespace
// control of the template (trim_blocks, lstrip_blocks, `-` markers) leaves no whitespace of its own
// in the output except the "\n" after turn headers and <end_of_turn>, and the 20 spaces noted at
// AppendToolCall.
#include "chat/render.h"

#include "chat/call_format.h"
#include "chat/jinja_values.h"
#include "chat/py_text.h"
#include "chat/schema.h"

namespace fgemma {
namespace {

using jinja::Value;

constexpr int kMaxDepth = 64;

Status AppendStr(Value v, PromptOut* out) {
  FGEMMA_TRY(std::string s, jinja::Str(v));
  out->append(s);
  return Status::Ok();
}

Status AppendTrimmed(Value v, PromptOut* out) {
  FGEMMA_TRY(std::string s, jinja::Str(v));
  out->append(py::Strip(s));
  return Status::Ok();
}

// `[<escape>a<escape>,<escape>b<escape>]` body of a required list: `for item in list`.
Status AppendRequiredItems(Value list, PromptOut* out) {
  return jinja::ForEach(list, [&](Value item, bool last) -> Status {
    out->control(kEscape);
    FGEMMA_RETURN_IF_ERROR(AppendStr(item, out));
    out->control(kEscape);
    if (!last) out->push_back(',');
    return Status::Ok();
  });
}

Status AppendParameters(Value properties, int depth, PromptOut* out);

// The ARRAY branch of format_parameters: `items` printed key by key (dictsort), with `properties`,
// `required` and `type` special-cased and every other key through format_argument with escaped keys.
Status AppendItems(Value items, int depth, PromptOut* out) {
  out->append(",items:{");
  FGEMMA_TRY(auto members, jinja::DictSort(items));
  bool first = true;
  for (const auto& [key, value] : members) {
    if (jinja::IsNone(value)) continue;
    if (!first) out->push_back(',');
    first = false;
    if (key == "properties") {
      out->append("properties:{");
      if (jinja::IsMapping(value)) FGEMMA_RETURN_IF_ERROR(AppendParameters(value, depth + 1, out));
      out->push_back('}');
    } else if (key == "required") {
      out->append("required:[");
      FGEMMA_RETURN_IF_ERROR(AppendRequiredItems(value, out));
      out->push_back(']');
    } else if (key == "type") {
      out->append("type:");
      OrderedJson upper;
      if (jinja::IsString(value)) {
        FGEMMA_TRY(std::string u, jinja::Upper(value));
        upper = u;
      } else {  // item_value | map('upper') | list
        upper = OrderedJson::array();
        FGEMMA_RETURN_IF_ERROR(jinja::ForEach(value, [&](Value v, bool) -> Status {
          FGEMMA_TRY(std::string u, jinja::Upper(v));
          upper.push_back(u);
          return Status::Ok();
        }));
      }
      FGEMMA_RETURN_IF_ERROR(AppendFormattedArgument(&upper, true, out));
    } else {
      out->append(key).push_back(':');
      FGEMMA_RETURN_IF_ERROR(AppendFormattedArgument(value, true, out));
    }
  }
  out->push_back('}');
  return Status::Ok();
}

// Macro format_parameters(properties, required): one `name:{description:...,type:...}` per property.
Status AppendParameters(Value properties, int depth, PromptOut* out) {
  if (depth > kMaxDepth) return InvalidArgument("parameters nested deeper than " + std::to_string(kMaxDepth) + " levels");
  FGEMMA_TRY(auto members, jinja::DictSort(properties));
  bool first = true;
  for (const auto& [key, value] : members) {
    if (IsTemplateReservedName(key)) continue;  // the template's standard_keys
    if (!first) out->push_back(',');
    first = false;
    out->append(key).append(":{description:").control(kEscape);
    FGEMMA_RETURN_IF_ERROR(AppendStr(jinja::Get(value, "description"), out));
    out->control(kEscape);
    FGEMMA_TRY(std::string type, jinja::Upper(jinja::Get(value, "type")));
    if (type == "STRING") {
      Value enum_values = jinja::Get(value, "enum");
      if (jinja::Truthy(enum_values)) {
        out->append(",enum:");
        FGEMMA_RETURN_IF_ERROR(AppendFormattedArgument(enum_values, true, out));
      }
    } else if (type == "OBJECT") {
      out->append(",properties:{");
      Value props = jinja::Get(value, "properties");
      if (jinja::IsMapping(props)) {
        FGEMMA_RETURN_IF_ERROR(AppendParameters(props, depth + 1, out));
      } else if (jinja::IsMapping(value)) {  // the schema's own keys are listed as if parameters
        FGEMMA_RETURN_IF_ERROR(AppendParameters(value, depth + 1, out));
      }
      out->push_back('}');
      Value required = jinja::Get(value, "required");
      if (jinja::Truthy(required)) {
        out->append(",required:[");
        FGEMMA_RETURN_IF_ERROR(AppendRequiredItems(required, out));
        out->push_back(']');
      }
    } else if (type == "ARRAY") {
      // A missing `items` is dict.items (a method) in jinja2: not a mapping, so nothing either way.
      Value items = jinja::Get(value, "items");
      if (jinja::IsMapping(items) && jinja::Truthy(items)) FGEMMA_RETURN_IF_ERROR(AppendItems(items, depth, out));
    }
    out->append(",type:").control(kEscape).append(type).control(kEscape).push_back('}');
  }
  return Status::Ok();
}

// Macro format_function_declaration(tool_data). Note that `parameters` is closed only by its
// `type:...}`: parameters without a truthy type leave the brace open, as the template does.
Status AppendDeclaration(Value tool, const std::string& path, PromptOut* out) {
  Value fn = jinja::Get(tool, "function");
  if (fn == nullptr) return InvalidArgument(path + ".function: undefined (tool_data['function']['name'] fails)");
  // The template trims this macro's output, which starts with "declaration:" and ends with "}":
  // nothing to trim, so it is written straight to `out`.
  PromptOut& decl = *out;
  decl.append("declaration:");
  FGEMMA_RETURN_IF_ERROR(AppendStr(jinja::Get(fn, "name"), &decl));
  decl.append("{description:").control(kEscape);
  FGEMMA_RETURN_IF_ERROR(AppendStr(jinja::Get(fn, "description"), &decl));
  decl.control(kEscape);
  Value params = jinja::Get(fn, "parameters");
  if (jinja::Truthy(params)) {
    decl.append(",parameters:{");
    Value props = jinja::Get(params, "properties");
    if (jinja::Truthy(props)) {
      decl.append("properties:{");
      FGEMMA_RETURN_IF_ERROR(AppendParameters(props, 0, &decl));
      decl.append("},");
    }
    Value required = jinja::Get(params, "required");
    if (jinja::Truthy(required)) {
      decl.append("required:[");
      FGEMMA_RETURN_IF_ERROR(AppendRequiredItems(required, &decl));
      decl.append("],");
    }
    Value type = jinja::Get(params, "type");
    if (jinja::Truthy(type)) {
      FGEMMA_TRY(std::string upper, jinja::Upper(type));
      decl.append("type:").control(kEscape).append(upper).control(kEscape).push_back('}');
    }
  }
  decl.push_back('}');
  return Status::Ok();
}

// `k:v,...` of a mapping through dictsort and format_argument(value, escape_keys=False).
Status AppendMembers(Value mapping, PromptOut* out) {
  FGEMMA_TRY(auto members, jinja::DictSort(mapping));
  for (size_t i = 0; i < members.size(); ++i) {
    if (i > 0) out->push_back(',');
    out->append(members[i].first).push_back(':');
    FGEMMA_RETURN_IF_ERROR(AppendFormattedArgument(members[i].second, false, out));
  }
  return Status::Ok();
}

// The system/developer turn with the declarations (nothing without tools or a leading
// system/developer message).
Status AppendDeveloperTurn(const OrderedJson& tools, const OrderedJson& messages, const RenderOptions& options,
                                   PromptOut* out) {
  // messages[0]['role'] raises in jinja2 when there is no first message.
  Value first = messages.empty() ? nullptr : &messages[0];
  auto first_role = [&]() -> Result<Value> {
    if (first == nullptr) return InvalidArgument("messages: empty (messages[0]['role'] is undefined)");
    return jinja::Get(first, "role");
  };
  const bool has_tools = jinja::Truthy(&tools);
  bool open_turn = has_tools;
  if (!open_turn) {
    FGEMMA_TRY(Value role, first_role());
    open_turn = jinja::Equals(role, "system") || jinja::Equals(role, "developer");
  }
  if (!open_turn) return Status::Ok();
  out->control(kStartOfTurn).append("developer\n");
  FGEMMA_TRY(Value role, first_role());
  if (jinja::Equals(role, "system") || jinja::Equals(role, "developer")) {
    Value content = jinja::Get(first, "content");
    if (jinja::IsString(content)) {
      FGEMMA_RETURN_IF_ERROR(AppendTrimmed(content, out));
    } else if (jinja::IsSequence(content)) {
      FGEMMA_RETURN_IF_ERROR(jinja::ForEach(content, [&](Value item, bool) -> Status {
        if (jinja::Equals(jinja::Get(item, "type"), "text")) return AppendTrimmed(jinja::Get(item, "text"), out);
        return Status::Ok();
      }));
    }
  } else if (options.template_kind == TemplateKind::kDefaultPreamble) {
    out->append(kDefaultDeveloperPreamble);
  }
  if (has_tools) {
    size_t index = 0;
    FGEMMA_RETURN_IF_ERROR(jinja::ForEach(&tools, [&](Value tool, bool) -> Status {
      out->control("<start_function_declaration>");
      FGEMMA_RETURN_IF_ERROR(AppendDeclaration(tool, FieldPath("tools", index++), out));
      out->control("<end_function_declaration>");
      return Status::Ok();
    }));
  }
  out->control(kEndOfTurn).push_back('\n');
  return Status::Ok();
}

// One assistant tool call. Arguments given as a string are printed verbatim after 20 spaces: the
// template's `{# ... #}` comment line and the indentation of the next `{{ }}` survive whitespace
// control there.
Status AppendToolCall(Value call, const std::string& path, PromptOut* out) {
  Value fn = jinja::Get(call, "function");
  if (fn == nullptr) return InvalidArgument(path + ".function: undefined");
  Value name = jinja::Get(fn, "name");
  if (!jinja::IsString(name)) return InvalidArgument(path + ".function.name: must be a string to be concatenated");
  out->control(kStartFunctionCall).append("call:").append(name->get_ref<const std::string&>()).push_back('{');
  FGEMMA_TRY(bool has_arguments, jinja::Contains(fn, "arguments"));
  if (has_arguments) {
    Value args = jinja::Get(fn, "arguments");
    if (jinja::IsMapping(args)) {
      FGEMMA_RETURN_IF_ERROR(AppendMembers(args, out));
    } else if (jinja::IsString(args)) {
      out->append(20, ' ').append(args->get_ref<const std::string&>());
    }
  }
  out->push_back('}');
  out->control(kEndFunctionCall);
  return Status::Ok();
}

Status AppendResponse(Value name, Value response, PromptOut* out) {
  out->control(kStartFunctionResponse).append("response:");
  FGEMMA_RETURN_IF_ERROR(AppendTrimmed(name, out));
  out->push_back('{');
  FGEMMA_RETURN_IF_ERROR(AppendMembers(response, out));
  out->push_back('}');
  out->control(kEndFunctionResponse);
  return Status::Ok();
}

// A tool message in any of the three shapes: a {name, response} mapping (or a mapping answered
// under the message's `name`), a string under the message's `name`, or a list of such mappings.
Status AppendToolMessage(Value message, const std::string& path, PromptOut* out) {
  FGEMMA_TRY(bool has_content, jinja::Contains(message, "content"));
  Value content = jinja::Get(message, "content");
  if (!has_content || !jinja::Truthy(content)) return Status::Ok();
  FGEMMA_TRY(bool message_has_name, jinja::Contains(message, "name"));
  auto append_mapping = [&](Value item, const std::string& where) -> Status {
    FGEMMA_TRY(bool has_name, jinja::Contains(item, "name"));
    FGEMMA_TRY(bool has_response, jinja::Contains(item, "response"));
    if (has_name && has_response) return AppendResponse(jinja::Get(item, "name"), jinja::Get(item, "response"), out);
    if (message_has_name) return AppendResponse(jinja::Get(message, "name"), item, out);
    return InvalidArgument(where + ": Invalid tool response mapping: must contain 'name' and 'response' keys, or 'name' must be in the message.");
  };
  const std::string cpath = path + ".content";
  if (jinja::IsMapping(content)) return append_mapping(content, cpath);
  if (jinja::IsString(content)) {
    if (!message_has_name) return InvalidArgument(path + ": Invalid tool response: 'name' must be provided.");
    out->control(kStartFunctionResponse).append("response:");
    FGEMMA_RETURN_IF_ERROR(AppendTrimmed(jinja::Get(message, "name"), out));
    out->append("{value:");
    FGEMMA_RETURN_IF_ERROR(AppendFormattedArgument(content, false, out));
    out->push_back('}');
    out->control(kEndFunctionResponse);
    return Status::Ok();
  }
  if (jinja::IsSequence(content)) {
    size_t index = 0;
    return jinja::ForEach(content, [&](Value item, bool) -> Status {
      const std::string where = FieldPath(cpath, index++);
      if (!jinja::IsMapping(item))
        return InvalidArgument(where + ": Invalid tool response message: multiple responses must all be mappings");
      return append_mapping(item, where);
    });
  }
  return InvalidArgument(cpath + ": Invalid content type in tool message: must be mapping, sequence of mappings, or string.");
}

// The content of a user/assistant/system message (strings trimmed; text parts trimmed one by one).
Status AppendContent(Value content, const std::string& path, PromptOut* out) {
  if (jinja::IsString(content)) return AppendTrimmed(content, out);
  if (jinja::IsSequence(content)) {
    return jinja::ForEach(content, [&](Value item, bool) -> Status {
      Value type = jinja::Get(item, "type");
      if (jinja::Equals(type, "image")) out->control("<start_of_image>");
      if (jinja::Equals(type, "text")) return AppendTrimmed(jinja::Get(item, "text"), out);
      return Status::Ok();
    });
  }
  return InvalidArgument(path + ": Invalid content type in user/assistant message");
}

// The message loop and the generation prompt. `prev` is the template's ns.prev_message_type.
Status AppendMessages(const OrderedJson& messages, size_t start, bool add_generation_prompt, PromptOut* out) {
  enum class Prev { kNone, kContent, kToolCall, kToolResponse } prev = Prev::kNone;
  for (size_t i = start; i < messages.size(); ++i) {
    Value message = &messages[i];
    const std::string path = FieldPath("messages", i);
    Value role = jinja::Get(message, "role");
    if (!jinja::Equals(role, "tool")) {
      if (prev != Prev::kToolResponse) {
        if (!jinja::IsString(role)) return InvalidArgument(path + ".role: must be a string to be concatenated");
        out->control(kStartOfTurn).append(jinja::Equals(role, "assistant") ? "model" : role->get_ref<const std::string&>());
        out->push_back('\n');
      }
      prev = Prev::kNone;
      FGEMMA_TRY(bool has_content, jinja::Contains(message, "content"));
      Value content = jinja::Get(message, "content");
      if (has_content && !jinja::IsNone(content)) {
        FGEMMA_RETURN_IF_ERROR(AppendContent(content, path + ".content", out));
        prev = Prev::kContent;
      }
      FGEMMA_TRY(bool has_calls, jinja::Contains(message, "tool_calls"));
      Value calls = jinja::Get(message, "tool_calls");
      if (has_calls && jinja::Truthy(calls) && jinja::IsSequence(calls)) {
        size_t index = 0;
        FGEMMA_RETURN_IF_ERROR(jinja::ForEach(calls, [&](Value call, bool) -> Status {
          return AppendToolCall(call, FieldPath(path + ".tool_calls", index++), out);
        }));
        // loop.last of the message loop: a trailing tool call opens the response for the caller.
        if (i + 1 == messages.size()) out->control(kStartFunctionResponse);
        prev = Prev::kToolCall;
      }
    } else {
      FGEMMA_RETURN_IF_ERROR(AppendToolMessage(message, path, out));
      prev = Prev::kToolResponse;
    }
    if (prev != Prev::kToolCall && prev != Prev::kToolResponse) out->control(kEndOfTurn).push_back('\n');
  }
  if (add_generation_prompt && prev != Prev::kToolResponse) out->control(kStartOfTurn).append("model\n");
  return Status::Ok();
}

// How many leading messages the developer turn consumes: the first, when it is system/developer.
size_t ConsumedByDeveloperTurn(const OrderedJson& messages) {
  if (messages.empty()) return 0;
  Value role = jinja::Get(&messages[0], "role");
  return jinja::Equals(role, "system") || jinja::Equals(role, "developer") ? 1 : 0;
}

Status CheckMessagesList(const OrderedJson& messages) {
  if (!messages.is_array()) return InvalidArgument(std::string("messages: must be a list, got ") + JsonKindName(messages));
  if (messages.empty()) return InvalidArgument("messages: empty (messages[0]['role'] is undefined)");
  return Status::Ok();
}

Result<PromptOut> Prefix(const OrderedJson& tools, const OrderedJson& messages, const RenderOptions& options) {
  FGEMMA_RETURN_IF_ERROR(CheckMessagesList(messages));
  PromptOut prefix;
  prefix.control(options.bos);
  FGEMMA_RETURN_IF_ERROR(AppendDeveloperTurn(tools, messages, options, &prefix));
  return prefix;
}

Result<PromptOut> Remainder(const OrderedJson& messages, const RenderOptions& options) {
  FGEMMA_RETURN_IF_ERROR(CheckMessagesList(messages));
  PromptOut remainder;
  FGEMMA_RETURN_IF_ERROR(
      AppendMessages(messages, ConsumedByDeveloperTurn(messages), options.add_generation_prompt, &remainder));
  return remainder;
}

}  // namespace

Result<PromptParts> RenderTemplateJson(const OrderedJson& tools, const OrderedJson& messages, const RenderOptions& options) {
  PromptParts parts;
  FGEMMA_TRY(PromptOut prefix, Prefix(tools, messages, options));
  FGEMMA_TRY(PromptOut remainder, Remainder(messages, options));
  parts.prefix_controls = prefix.controls();
  parts.remainder_controls = remainder.controls();
  parts.prefix = std::move(prefix.mutable_text());
  parts.remainder = std::move(remainder.mutable_text());
  return parts;
}

Result<PromptParts> RenderPromptParts(const ChatRequest& request, const RenderOptions& options) {
  return RenderTemplateJson(request.tools_json, request.messages_json, options);
}

Result<std::string> RenderPrompt(const ChatRequest& request, const RenderOptions& options) {
  FGEMMA_TRY(PromptParts parts, RenderPromptParts(request, options));
  return parts.prefix + parts.remainder;
}

Result<std::string> RenderCatalogPrefix(const ChatRequest& request, const RenderOptions& options) {
  FGEMMA_TRY(PromptOut prefix, Prefix(request.tools_json, request.messages_json, options));
  return std::move(prefix.mutable_text());
}

Result<std::string> RenderRemainder(const ChatRequest& request, const RenderOptions& options) {
  FGEMMA_TRY(PromptOut remainder, Remainder(request.messages_json, options));
  return std::move(remainder.mutable_text());
}

}  // namespace fgemma
