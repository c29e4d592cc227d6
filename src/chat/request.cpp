#include "chat/request.h"

#include <unordered_map>
#include <vector>

#include "chat/call_format.h"

namespace fgemma {
namespace {

Status ExpectObject(const OrderedJson& j, const std::string& path) {
  if (!j.is_object()) return InvalidArgument(path + ": must be an object, got " + JsonKindName(j));
  return Status::Ok();
}

// An optional string member: "" when absent; an error when present with another type.
Result<std::string> OptionalString(const OrderedJson& j, const char* key, const std::string& path) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::string();
  if (!it->is_string()) return InvalidArgument(FieldPath(path, key) + ": must be a string, got " + JsonKindName(*it));
  return it->get<std::string>();
}

Status CheckFunctionType(const OrderedJson& j, const std::string& path) {
  auto it = j.find("type");
  if (it != j.end() && !(it->is_string() && *it == "function"))
    return InvalidArgument(path + ".type: must be \"function\", got " + JsonText(*it));
  return Status::Ok();
}

Result<Tool> ParseTool(const OrderedJson& j, const std::string& path) {
  FGEMMA_RETURN_IF_ERROR(ExpectObject(j, path));
  FGEMMA_RETURN_IF_ERROR(CheckFunctionType(j, path));
  auto fn_it = j.find("function");
  if (fn_it == j.end())
    return InvalidArgument(path + ".function: missing (a tool is {\"type\":\"function\",\"function\":{name, description, parameters}})");
  const std::string fpath = path + ".function";
  const OrderedJson& fn = *fn_it;
  FGEMMA_RETURN_IF_ERROR(ExpectObject(fn, fpath));
  Tool tool;
  auto name_it = fn.find("name");
  if (name_it == fn.end()) return InvalidArgument(fpath + ".name: missing");
  if (!name_it->is_string()) return InvalidArgument(fpath + ".name: must be a string, got " + JsonKindName(*name_it));
  tool.name = name_it->get<std::string>();
  if (!IsPlainName(tool.name))
    return InvalidArgument(fpath + ".name: '" + tool.name + "' must be non-empty, without whitespace or any of :,{}[]<>");
  FGEMMA_TRY(tool.description, OptionalString(fn, "description", fpath));
  tool.parameters.type = SchemaType::kObject;
  tool.parameters.has_properties = true;  // no parameters declared: no argument is acceptable
  auto params_it = fn.find("parameters");
  if (params_it != fn.end() && !params_it->is_null() && !(params_it->is_object() && params_it->empty())) {
    const std::string ppath = fpath + ".parameters";
    FGEMMA_TRY(tool.parameters, ParseSchema(*params_it, ppath));
    if (tool.parameters.IsUnion()) return Unsupported(ppath + ": a union (anyOf, a type list) at the top is not supported; parameters is one object");
    if (tool.parameters.type != SchemaType::kObject)
      return InvalidArgument(ppath + ".type: must be \"object\", got '" + SchemaTypeName(tool.parameters.type) + "'");
  }
  return tool;
}

// Text of a user/assistant/system/developer message; `has_content` false for absent or null.
Status ParseTextContent(const OrderedJson& m, const std::string& path, Message* out) {
  auto it = m.find("content");
  if (it == m.end() || it->is_null()) return Status::Ok();
  const std::string cpath = path + ".content";
  out->has_content = true;
  if (it->is_string()) {
    out->text = it->get<std::string>();
    return Status::Ok();
  }
  if (!it->is_array())
    return InvalidArgument(cpath + ": must be a string, an array of content parts or null, got " + JsonKindName(*it));
  for (size_t i = 0; i < it->size(); ++i) {
    const OrderedJson& part = (*it)[i];
    const std::string ppath = FieldPath(cpath, i);
    FGEMMA_RETURN_IF_ERROR(ExpectObject(part, ppath));
    FGEMMA_TRY(std::string type, OptionalString(part, "type", ppath));
    if (type == "text") {
      auto text = part.find("text");
      if (text == part.end() || !text->is_string()) return InvalidArgument(ppath + ".text: must be a string");
      out->text += text->get<std::string>();
    } else if (type == "image" || type == "image_url" || type == "input_audio" || type == "audio" || type == "file") {
      return Unsupported(ppath + ".type: '" + type + "' content is not supported (FunctionGemma reads text only)");
    } else {
      return InvalidArgument(ppath + ".type: unsupported content part type '" + type + "'");
    }
  }
  return Status::Ok();
}

Result<ToolCall> ParseToolCall(const OrderedJson& j, const std::string& path) {
  FGEMMA_RETURN_IF_ERROR(ExpectObject(j, path));
  FGEMMA_RETURN_IF_ERROR(CheckFunctionType(j, path));
  ToolCall call;
  FGEMMA_TRY(call.id, OptionalString(j, "id", path));
  auto fn_it = j.find("function");
  if (fn_it == j.end()) return InvalidArgument(path + ".function: missing");
  const std::string fpath = path + ".function";
  FGEMMA_RETURN_IF_ERROR(ExpectObject(*fn_it, fpath));
  auto name_it = fn_it->find("name");
  if (name_it == fn_it->end() || !name_it->is_string() || !IsPlainName(name_it->get<std::string>()))
    return InvalidArgument(fpath + ".name: must be a function name (a non-empty string without whitespace or :,{}[]<>)");
  call.name = name_it->get<std::string>();
  call.arguments = OrderedJson::object();
  if (auto args = fn_it->find("arguments"); args != fn_it->end() && !args->is_null()) {
    if (!args->is_object() && !args->is_string())
      return InvalidArgument(fpath + ".arguments: must be an object (or JSON text), got " + JsonKindName(*args));
    call.arguments = *args;
  }
  return call;
}

Status AddToolResult(const OrderedJson& item, const Message& m, const std::string& path, Message* out) {
  FGEMMA_RETURN_IF_ERROR(ExpectObject(item, path));
  if (item.contains("name") && item.contains("response")) {
    const auto& name = item["name"];
    if (!name.is_string()) return InvalidArgument(path + ".name: must be a string, got " + JsonKindName(name));
    if (!item["response"].is_object())
      return InvalidArgument(path + ".response: must be an object, got " + JsonKindName(item["response"]));
    out->tool_results.push_back({name.get<std::string>(), item["response"]});
  } else if (!m.name.empty()) {
    out->tool_results.push_back({m.name, item});
  } else {
    return InvalidArgument(path + ": a tool response needs 'name' and 'response' members, or a 'name' on the message");
  }
  return Status::Ok();
}

Status ParseToolContent(const OrderedJson& j, const std::string& path, Message* out) {
  const std::string cpath = path + ".content";
  auto it = j.find("content");
  const bool empty = it == j.end() || it->is_null() || (it->is_string() && it->get_ref<const std::string&>().empty()) ||
                     ((it->is_array() || it->is_object()) && it->empty());
  if (empty) return InvalidArgument(cpath + ": a tool message needs a response (the template renders nothing for an empty one)");
  out->has_content = true;
  if (it->is_string()) {
    if (out->name.empty()) return InvalidArgument(path + ".name: a tool message with string content needs the function name");
    out->text = it->get<std::string>();
    out->tool_results.push_back({out->name, *it});
  } else if (it->is_object()) {
    FGEMMA_RETURN_IF_ERROR(AddToolResult(*it, *out, cpath, out));
  } else if (it->is_array()) {
    for (size_t i = 0; i < it->size(); ++i) FGEMMA_RETURN_IF_ERROR(AddToolResult((*it)[i], *out, FieldPath(cpath, i), out));
  } else {
    return InvalidArgument(cpath + ": must be a string, an object or an array of objects, got " + JsonKindName(*it));
  }
  return Status::Ok();
}

Result<Role> ParseRole(const OrderedJson& m, const std::string& path) {
  auto it = m.find("role");
  if (it == m.end()) return InvalidArgument(path + ".role: missing");
  if (!it->is_string()) return InvalidArgument(path + ".role: must be a string, got " + JsonKindName(*it));
  const std::string& r = it->get_ref<const std::string&>();
  if (r == "system") return Role::kSystem;
  if (r == "developer") return Role::kDeveloper;
  if (r == "user") return Role::kUser;
  if (r == "assistant" || r == "model") return Role::kAssistant;
  if (r == "tool") return Role::kTool;
  return InvalidArgument(path + ".role: unsupported role '" + r + "' (expected system, developer, user, assistant or tool)");
}

Result<Message> ParseMessage(const OrderedJson& j, const std::string& path) {
  FGEMMA_RETURN_IF_ERROR(ExpectObject(j, path));
  Message m;
  FGEMMA_TRY(m.role, ParseRole(j, path));
  FGEMMA_TRY(m.name, OptionalString(j, "name", path));
  FGEMMA_TRY(m.tool_call_id, OptionalString(j, "tool_call_id", path));
  auto calls = j.find("tool_calls");
  const bool has_calls = calls != j.end() && !calls->is_null() && !(calls->is_array() && calls->empty());
  if (has_calls && m.role != Role::kAssistant)
    return InvalidArgument(path + ".tool_calls: only assistant messages carry tool calls");
  if (m.role == Role::kTool) {
    FGEMMA_RETURN_IF_ERROR(ParseToolContent(j, path, &m));
    return m;
  }
  FGEMMA_RETURN_IF_ERROR(ParseTextContent(j, path, &m));
  if (has_calls) {
    if (!calls->is_array()) return InvalidArgument(path + ".tool_calls: must be an array, got " + JsonKindName(*calls));
    for (size_t i = 0; i < calls->size(); ++i) {
      FGEMMA_TRY(ToolCall call, ParseToolCall((*calls)[i], FieldPath(path + ".tool_calls", i)));
      m.tool_calls.push_back(std::move(call));
    }
  }
  return m;
}

// In a chat-completions body an element of a tool message's content with a `type` is a content part:
// its type must be a string, and a text part's text a string. (Without this, {"type":5} would pass
// as a tool response object; other parts are left for ParseToolContent.) Every member is checked
// before it is read: nlohmann's value("type", "") throws on {"type":5}.
Status CheckContentPartTypes(const OrderedJson& part, const std::string& path) {
  if (!part.is_object()) return Status::Ok();
  const auto type = part.find("type");
  if (type == part.end()) return Status::Ok();
  if (!type->is_string()) return InvalidArgument(path + ".type: must be a string, got " + JsonKindName(*type));
  if (*type != "text") return Status::Ok();
  const auto text = part.find("text");
  if (text == part.end() || !text->is_string())
    return InvalidArgument(path + ".text: must be a string, got " + (text == part.end() ? "nothing" : JsonKindName(*text)));
  return Status::Ok();
}

// {"type":"text","text":"..."}, with both members strings.
bool IsTextPart(const OrderedJson& part) {
  if (!part.is_object()) return false;
  const auto type = part.find("type");
  const auto text = part.find("text");
  return type != part.end() && type->is_string() && *type == "text" && text != part.end() && text->is_string();
}

// The chat-completions conventions the template does not understand, rewritten into the shapes it
// does (see RequestFormat::kOpenAI).
Status ConvertOpenAIMessages(OrderedJson* messages) {
  std::vector<std::pair<std::string, std::string>> call_names;  // (tool_call_id, function name)
  for (size_t i = 0; i < messages->size(); ++i) {
    OrderedJson& m = (*messages)[i];
    const std::string path = FieldPath("messages", i);
    if (!m.is_object()) continue;  // reported by the validation that follows
    if (auto calls = m.find("tool_calls"); calls != m.end() && calls->is_array()) {
      for (size_t c = 0; c < calls->size(); ++c) {
        OrderedJson& call = (*calls)[c];
        if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
        OrderedJson& fn = call["function"];
        if (call.contains("id") && call["id"].is_string() && fn.contains("name") && fn["name"].is_string())
          call_names.emplace_back(call["id"].get<std::string>(), fn["name"].get<std::string>());
        auto args = fn.find("arguments");
        if (args == fn.end() || !args->is_string()) continue;
        const std::string apath = FieldPath(path + ".tool_calls", c) + ".function.arguments";
        const std::string& text = args->get_ref<const std::string&>();
        OrderedJson decoded = OrderedJson::object();
        if (text.find_first_not_of(" \t\r\n") != std::string::npos) {
          FGEMMA_TRY(decoded, ParseOrderedJson(text, apath));
        }
        if (!decoded.is_object()) return InvalidArgument(apath + ": must encode a JSON object, got " + JsonKindName(decoded));
        *args = std::move(decoded);
      }
    }
    if (!(m.contains("role") && m["role"] == "tool")) continue;
    if (auto content = m.find("content"); content != m.end() && content->is_array()) {
      std::string joined;
      bool all_text = !content->empty();
      for (size_t p = 0; p < content->size(); ++p) {
        const OrderedJson& part = (*content)[p];
        FGEMMA_RETURN_IF_ERROR(CheckContentPartTypes(part, FieldPath(path + ".content", p)));
        all_text = all_text && IsTextPart(part);
        if (all_text) joined += part["text"].get<std::string>();
      }
      if (all_text) *content = joined;
    }
    if (!m.contains("name") && m.contains("tool_call_id") && m["tool_call_id"].is_string()) {
      const std::string& id = m["tool_call_id"].get_ref<const std::string&>();
      for (auto it = call_names.rbegin(); it != call_names.rend(); ++it) {
        if (it->first == id) {
          m["name"] = it->second;
          break;
        }
      }
      if (!m.contains("name"))
        return InvalidArgument(path + ".tool_call_id: '" + id + "' answers no earlier tool call, and the message has no 'name'");
    }
  }
  return Status::Ok();
}

// Bytes of the strings (keys included) in `j`, walked with an explicit stack: a message's arguments
// or response may be nested as deep as the JSON limit allows, and recursion here is not needed.
size_t StringBytes(const OrderedJson& j) {
  size_t bytes = 0;
  std::vector<const OrderedJson*> stack{&j};
  while (!stack.empty()) {
    const OrderedJson* v = stack.back();
    stack.pop_back();
    if (v->is_string()) {
      bytes += v->get_ref<const std::string&>().size();
    } else if (v->is_object()) {
      for (auto it = v->begin(); it != v->end(); ++it) {
        bytes += it.key().size();
        stack.push_back(&it.value());
      }
    } else if (v->is_array()) {
      for (const auto& e : *v) stack.push_back(&e);
    }
  }
  return bytes;
}

// What a message contributes to kMaxMessageBytes: its text, its calls' names and arguments, its
// results' names and structured responses (a string response is the text already).
size_t MessageBytes(const Message& m) {
  size_t bytes = m.text.size();
  for (const ToolCall& c : m.tool_calls) bytes += c.name.size() + StringBytes(c.arguments);
  for (const ToolResult& r : m.tool_results) bytes += r.name.size() + (r.response.is_string() ? 0 : StringBytes(r.response));
  return bytes;
}

}  // namespace

const char* RoleName(Role role) {
  switch (role) {
    case Role::kSystem: return "system";
    case Role::kDeveloper: return "developer";
    case Role::kUser: return "user";
    case Role::kAssistant: return "assistant";
    case Role::kTool: return "tool";
  }
  return "?";
}

const Tool* ChatRequest::FindTool(std::string_view name) const {  // first declaration wins
  for (const auto& t : tools) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Result<std::vector<Tool>> ParseTools(const OrderedJson& tools, const std::string& path, std::vector<std::string>* warnings) {
  if (!tools.is_array()) return InvalidArgument(path + ": must be an array of tools, got " + JsonKindName(tools));
  // Counted before any tool is parsed, so an oversized catalog costs nothing.
  if (tools.size() > kMaxTools)
    return OutOfRange(path + ": " + std::to_string(tools.size()) + " functions, the limit is " + std::to_string(kMaxTools));
  std::vector<Tool> out;
  out.reserve(tools.size());
  std::unordered_map<std::string, size_t> first_index;  // name -> first declaration (linear, not pairwise)
  first_index.reserve(tools.size());
  for (size_t i = 0; i < tools.size(); ++i) {
    FGEMMA_TRY(Tool tool, ParseTool(tools[i], FieldPath(path, i)));
    const auto [it, inserted] = first_index.emplace(tool.name, i);
    if (!inserted && warnings != nullptr)
      warnings->push_back(FieldPath(path, i) + ".function.name: '" + tool.name + "' is already declared by " +
                          FieldPath(path, it->second) + "; calls are checked against the first declaration");
    out.push_back(std::move(tool));
  }
  return out;
}

Result<ChatRequest> ParseChatRequest(const OrderedJson& body, RequestFormat format) {
  FGEMMA_RETURN_IF_ERROR(ExpectObject(body, "request"));
  if (format == RequestFormat::kAuto) format = body.contains("model") ? RequestFormat::kOpenAI : RequestFormat::kTemplateInput;
  ChatRequest req;
  if (auto it = body.find("tools"); it != body.end() && !it->is_null()) {
    FGEMMA_TRY(req.tools, ParseTools(*it, "tools", &req.warnings));
    req.tools_json = *it;
  }
  auto msgs = body.find("messages");
  if (msgs == body.end()) return InvalidArgument("messages: missing");
  if (!msgs->is_array() || msgs->empty()) return InvalidArgument("messages: must be a non-empty array");
  if (msgs->size() > kMaxMessages)
    return OutOfRange("messages: " + std::to_string(msgs->size()) + " messages, the limit is " + std::to_string(kMaxMessages));
  req.messages_json = *msgs;
  if (format == RequestFormat::kOpenAI) FGEMMA_RETURN_IF_ERROR(ConvertOpenAIMessages(&req.messages_json));
  size_t content_bytes = 0;
  for (size_t i = 0; i < req.messages_json.size(); ++i) {
    FGEMMA_TRY(Message m, ParseMessage(req.messages_json[i], FieldPath("messages", i)));
    content_bytes += MessageBytes(m);
    if (content_bytes > kMaxMessageBytes)
      return OutOfRange(FieldPath("messages", i) + ": the messages' content reaches " + std::to_string(content_bytes) +
                        " bytes, the limit is " + std::to_string(kMaxMessageBytes));
    req.messages.push_back(std::move(m));
  }
  if (auto it = body.find("add_generation_prompt"); it != body.end()) {
    if (!it->is_boolean()) return InvalidArgument("add_generation_prompt: must be a boolean, got " + std::string(JsonKindName(*it)));
    req.add_generation_prompt = it->get<bool>();
  }
  return req;
}

Result<ChatRequest> ParseChatRequestText(std::string_view text, const std::string& what, RequestFormat format) {
  FGEMMA_TRY(OrderedJson body, ParseOrderedJson(text, what));
  auto req = ParseChatRequest(body, format);
  if (!req.ok()) return req.status().WithContext(what);
  return req;
}

}  // namespace fgemma
