// The one way the project replaces a file (caches, converted models, configs, score output).
//
// A fresh temporary file is created exclusively beside the target (O_CREAT|O_EXCL|O_NOFOLLOW, an
// unpredictable name, so a link planted at any fixed name is never followed), written, fsynced and
// renamed over the target, then the directory is fsynced: a crash leaves the old file or the new
// one, never half of one. Only a regular file is ever replaced: a target that is a symlink, a
// directory, a device or a FIFO is an error naming the path (as root, `--cache /dev/null` must not
// replace /dev/null). Any failure removes the temporary file.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "util/status.h"

namespace fgemma {

// OK when `path` does not exist or is a regular file (lstat: a symlink is refused, whatever it
// points to); otherwise an error naming the path and what it is.
Status CheckReplaceableFile(const std::string& path);

class FileReplacement {
 public:
  // Checks the target (CheckReplaceableFile) and creates the temporary file beside it.
  static Result<FileReplacement> Begin(const std::string& target);

  FileReplacement(FileReplacement&& other) noexcept;
  FileReplacement& operator=(FileReplacement&& other) noexcept;
  FileReplacement(const FileReplacement&) = delete;
  FileReplacement& operator=(const FileReplacement&) = delete;
  ~FileReplacement();  // removes the temporary file unless Commit() succeeded

  // Writes all of `data` (unbuffered). Do not mix with stream().
  Status Write(const void* data, size_t n);
  // A buffered stdio stream over the temporary file (made on first use; Commit flushes it).
  std::FILE* stream();
  // Flushes, fsyncs, re-checks the target, renames the temporary over it and fsyncs the directory.
  Status Commit();
  // Removes the temporary file (also done by the destructor).
  void Abandon();

  const std::string& target() const { return target_; }
  const std::string& temp_path() const { return temp_; }

 private:
  FileReplacement() = default;
  std::string target_;
  std::string temp_;
  int fd_ = -1;
  std::FILE* stream_ = nullptr;  // owns fd_ once made
};

// Begin, Write, Commit.
Status ReplaceFileContents(const std::string& path, std::string_view contents);

}  // namespace fgemma
