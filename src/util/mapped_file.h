// Read-only memory mapping of a whole file. Weights are used in place from the mapping; nothing is
// copied unless a format needs repacking once at load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "util/status.h"

namespace fgemma {

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Maps `path`. Fails clearly when the file is missing, unreadable, or (on 32-bit builds) larger
  // than the address space can map.
  static Result<MappedFile> Open(const std::string& path);

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// Drops this process's copy of the whole pages inside [p, p + n) of a read-only file mapping
// (MappedFile): RSS falls, and the pages are read from the file again if touched. For weights that
// were copied into another layout at load. Never call it on memory that is not a file mapping.
void ReleaseMappedPages(const void* p, size_t n);

// Reads a whole (small) file into a string: configs, JSON, ids.
Result<std::string> ReadFileToString(const std::string& path);
Status WriteStringToFile(const std::string& path, const std::string& contents);
bool FileExists(const std::string& path);
bool IsDirectory(const std::string& path);

}  // namespace fgemma
