#include "server/http_policy.h"

#include <algorithm>
#include <cctype>

namespace fgemma::server {
namespace {

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

bool IsJsonContentType(const std::string& content_type) {
  const std::string ct = Lower(content_type);
  if (Trim(ct).empty()) return true;
  size_t pos = ct.find(';');
  if (Trim(ct.substr(0, pos)) != "application/json") return false;
  while (pos != std::string::npos) {
    const size_t next = ct.find(';', pos + 1);
    const std::string param = Trim(ct.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1));
    pos = next;
    if (param.empty()) continue;
    const size_t eq = param.find('=');
    if (eq == std::string::npos) return false;
    const std::string name = Trim(param.substr(0, eq));
    std::string value = Trim(param.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    if (name != "charset" || (value != "utf-8" && value != "utf8")) return false;
  }
  return true;
}

}  // namespace fgemma::server
