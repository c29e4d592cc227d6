#include "io/safetensors.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>

#include "util/json.h"

namespace fgemma {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // real headers are < 1 MB

Result<DType> SafetensorsDType(const std::string& s) {
  if (s == "F32") return DType::kF32;
  if (s == "F16") return DType::kF16;
  if (s == "BF16") return DType::kBF16;
  return Unsupported("dtype '" + s + "' is not supported (F32, F16, BF16)");
}

const char* SafetensorsDTypeName(DType t) {
  switch (t) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    default: return nullptr;
  }
}

uint64_t ReadU64LE(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

struct ParsedEntry {
  std::string name;
  DType dtype;
  std::vector<uint64_t> shape;
  uint64_t begin, end;  // relative to the data section
};

// Parses and validates a header; fills `entries`. `what` names the file in errors.
Status ParseHeader(const uint8_t* data, size_t size, const std::string& what, uint64_t* data_start,
                   std::vector<ParsedEntry>* entries) {
  if (size < 8) return CorruptFile(what + ": file is " + std::to_string(size) + " bytes, too short for a safetensors header");
  const uint64_t header_len = ReadU64LE(data);
  if (header_len > size - 8)
    return CorruptFile(what + ": header length " + std::to_string(header_len) + " at offset 0 runs past the end of the " +
                       std::to_string(size) + "-byte file");
  if (header_len > kMaxHeaderBytes) return CorruptFile(what + ": header length " + std::to_string(header_len) + " is implausibly large");
  auto parsed = ParseJson(std::string_view(reinterpret_cast<const char*>(data + 8), static_cast<size_t>(header_len)),
                          what + " (safetensors header)");
  if (!parsed.ok()) return Status(ErrorCode::kCorruptFile, parsed.status().message());
  const Json& header = parsed.value();
  if (!header.is_object()) return CorruptFile(what + ": safetensors header is not a JSON object");
  *data_start = 8 + header_len;
  const uint64_t data_size = size - *data_start;

  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const std::string field = what + ": tensor '" + it.key() + "'";
    const Json& info = it.value();
    if (!info.is_object()) return CorruptFile(field + ": entry is not an object");
    auto dt = info.find("dtype");
    auto sh = info.find("shape");
    auto off = info.find("data_offsets");
    if (dt == info.end() || !dt->is_string()) return CorruptFile(field + ": missing or non-string 'dtype'");
    if (sh == info.end() || !sh->is_array()) return CorruptFile(field + ": missing or non-array 'shape'");
    if (off == info.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned())
      return CorruptFile(field + ": 'data_offsets' must be two unsigned integers");
    auto dtype = SafetensorsDType(dt->get<std::string>());
    if (!dtype.ok()) return dtype.status().WithContext(field);
    ParsedEntry e{it.key(), dtype.value(), {}, (*off)[0].get<uint64_t>(), (*off)[1].get<uint64_t>()};
    uint64_t count = 1;
    for (const Json& d : *sh) {
      if (!d.is_number_unsigned()) return CorruptFile(field + ": shape entries must be non-negative integers");
      const uint64_t v = d.get<uint64_t>();
      if (v != 0 && count > std::numeric_limits<uint64_t>::max() / v) return CorruptFile(field + ": shape product overflows");
      count *= v;
      e.shape.push_back(v);
    }
    if (e.begin > e.end) return CorruptFile(field + ": data_offsets begin " + std::to_string(e.begin) + " > end " + std::to_string(e.end));
    if (e.end > data_size)
      return CorruptFile(field + ": data_offsets end " + std::to_string(e.end) + " is past the data section (" +
                         std::to_string(data_size) + " bytes)");
    const uint64_t elem = DTypeBlockBytes(e.dtype);
    if (count > std::numeric_limits<uint64_t>::max() / elem || count * elem != e.end - e.begin)
      return CorruptFile(field + ": shape holds " + std::to_string(count) + " " + DTypeName(e.dtype) + " values but data_offsets span " +
                         std::to_string(e.end - e.begin) + " bytes");
    entries->push_back(std::move(e));
  }
  // Tensors must not overlap (a corrupt or malicious header could alias weights).
  std::vector<const ParsedEntry*> order;
  for (const auto& e : *entries) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
  const ParsedEntry* reach = nullptr;  // non-empty tensor reaching furthest so far
  for (const ParsedEntry* e : order) {
    if (e->begin == e->end) continue;
    if (reach != nullptr && e->begin < reach->end)
      return CorruptFile(what + ": tensors '" + reach->name + "' and '" + e->name + "' overlap in the data section");
    if (reach == nullptr || e->end > reach->end) reach = e;
  }
  return Status::Ok();
}

}  // namespace

Result<size_t> ValidateSafetensorsImage(const uint8_t* data, size_t size, const std::string& name) {
  uint64_t start = 0;
  std::vector<ParsedEntry> entries;
  FGEMMA_RETURN_IF_ERROR(ParseHeader(data, size, name, &start, &entries));
  return entries.size();
}

Status SafetensorsCheckpoint::ParseFile(size_t file_index) {
  const MappedFile& file = files_[file_index];
  uint64_t data_start = 0;
  std::vector<ParsedEntry> entries;
  FGEMMA_RETURN_IF_ERROR(ParseHeader(file.data(), file.size(), file.path(), &data_start, &entries));
  for (auto& e : entries) {
    if (tensors_.count(e.name))
      return CorruptFile(file.path() + ": tensor '" + e.name + "' appears in more than one shard");
    SafetensorsTensor t;
    t.name = e.name;
    t.dtype = e.dtype;
    t.shape = std::move(e.shape);
    t.data = file.data() + data_start + e.begin;
    t.bytes = e.end - e.begin;
    t.file = &file.path();
    tensors_.emplace(e.name, std::move(t));
  }
  return Status::Ok();
}

Result<std::unique_ptr<SafetensorsCheckpoint>> SafetensorsCheckpoint::FromFiles(std::vector<MappedFile> files) {
  auto ckpt = std::unique_ptr<SafetensorsCheckpoint>(new SafetensorsCheckpoint());
  ckpt->files_ = std::move(files);
  for (size_t i = 0; i < ckpt->files_.size(); ++i) FGEMMA_RETURN_IF_ERROR(ckpt->ParseFile(i));
  // File paths are referenced by pointer from tensors: files_ must not reallocate after this point.
  return ckpt;
}

Result<std::unique_ptr<SafetensorsCheckpoint>> SafetensorsCheckpoint::Open(const std::string& path) {
  std::string p = path;
  if (IsDirectory(p)) {
    if (FileExists(p + "/model.safetensors")) {
      p += "/model.safetensors";
    } else if (FileExists(p + "/model.safetensors.index.json")) {
      p += "/model.safetensors.index.json";
    } else {
      return NotFound(path + ": directory has neither model.safetensors nor model.safetensors.index.json");
    }
  }
  std::vector<std::string> shard_paths;
  if (p.size() >= 5 && p.compare(p.size() - 5, 5, ".json") == 0) {
    FGEMMA_TRY(Json index, ReadJsonFile(p));
    auto wm = index.find("weight_map");
    if (!index.is_object() || wm == index.end() || !wm->is_object())
      return InvalidArgument(p + ": missing 'weight_map' object");
    const std::string dir = p.substr(0, p.find_last_of('/') == std::string::npos ? 0 : p.find_last_of('/') + 1);
    std::set<std::string> unique;
    for (auto it = wm->begin(); it != wm->end(); ++it) {
      if (!it->is_string()) return InvalidArgument(p + ": weight_map['" + it.key() + "'] is not a string");
      const std::string shard = it->get<std::string>();
      if (shard.find('/') != std::string::npos || shard.empty() || shard == "..")
        return InvalidArgument(p + ": weight_map['" + it.key() + "'] names '" + shard + "', not a file beside the index");
      unique.insert(shard);
    }
    for (const auto& s : unique) shard_paths.push_back(dir + s);
    if (shard_paths.empty()) return InvalidArgument(p + ": weight_map is empty");
    std::vector<MappedFile> files;
    for (const auto& sp : shard_paths) {
      FGEMMA_TRY(MappedFile f, MappedFile::Open(sp));
      files.push_back(std::move(f));
    }
    FGEMMA_TRY(auto ckpt, FromFiles(std::move(files)));
    for (auto it = wm->begin(); it != wm->end(); ++it) {
      const SafetensorsTensor* t = ckpt->Find(it.key());
      if (t == nullptr) return NotFound(p + ": weight_map lists '" + it.key() + "' but no shard holds it");
      if (*t->file != dir + it->get<std::string>())
        return CorruptFile(p + ": weight_map puts '" + it.key() + "' in " + it->get<std::string>() + " but it is in " + *t->file);
    }
    return ckpt;
  }
  FGEMMA_TRY(MappedFile f, MappedFile::Open(p));
  std::vector<MappedFile> files;
  files.push_back(std::move(f));
  return FromFiles(std::move(files));
}

const SafetensorsTensor* SafetensorsCheckpoint::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

// ---- writer ----

Result<std::unique_ptr<SafetensorsWriter>> SafetensorsWriter::Create(const std::string& path, std::vector<Entry> entries,
                                                                     const std::map<std::string, std::string>& metadata) {
  auto w = std::unique_ptr<SafetensorsWriter>(new SafetensorsWriter());
  w->path_ = path;
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& e : entries) {
    const char* dt = SafetensorsDTypeName(e.dtype);
    if (dt == nullptr) return Unsupported(std::string("safetensors cannot store ") + DTypeName(e.dtype));
    uint64_t count = 1;
    for (uint64_t d : e.shape) count *= d;
    const uint64_t bytes = count * DTypeBlockBytes(e.dtype);
    header[e.name] = {{"dtype", dt}, {"shape", e.shape}, {"data_offsets", {offset, offset + bytes}}};
    w->sizes_.push_back(bytes);
    offset += bytes;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');  // keep the data section 8-byte aligned
  FGEMMA_TRY(FileReplacement rep, FileReplacement::Begin(path));
  w->replacement_ = std::make_unique<FileReplacement>(std::move(rep));
  w->out_ = w->replacement_->stream();
  if (w->out_ == nullptr) return IoError(path + ": cannot open for writing");
  uint8_t len[8];
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));
  if (std::fwrite(len, 1, 8, w->out_) != 8 || std::fwrite(text.data(), 1, text.size(), w->out_) != text.size())
    return IoError(path + ": write failed");
  w->entries_ = std::move(entries);
  while (w->next_ < w->entries_.size() && w->sizes_[w->next_] == 0) ++w->next_;
  return w;
}

SafetensorsWriter::~SafetensorsWriter() = default;  // an unfinished file's temporary is removed

Status SafetensorsWriter::Append(const void* data, uint64_t bytes) {
  if (next_ >= entries_.size()) return Internal(path_ + ": more tensor data written than declared");
  if (written_in_current_ + bytes > sizes_[next_])
    return Internal(path_ + ": tensor '" + entries_[next_].name + "' receives more than its declared " +
                    std::to_string(sizes_[next_]) + " bytes");
  if (std::fwrite(data, 1, static_cast<size_t>(bytes), out_) != bytes) return IoError(path_ + ": write failed");
  written_in_current_ += bytes;
  // Skip over zero-sized tensors too.
  while (next_ < entries_.size() && written_in_current_ == sizes_[next_]) {
    ++next_;
    written_in_current_ = 0;
  }
  return Status::Ok();
}

Status SafetensorsWriter::Finish() {
  if (next_ != entries_.size()) return Internal(path_ + ": only " + std::to_string(next_) + " of " + std::to_string(entries_.size()) + " tensors written");
  out_ = nullptr;
  Status st = replacement_->Commit();
  replacement_.reset();
  return st;
}

}  // namespace fgemma
