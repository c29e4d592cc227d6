#include "util/file_replace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

namespace fgemma {
namespace {

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// What a non-regular file is, for the error message.
const char* KindOf(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// 64 random bits as hex: a name nobody can plant in advance.
std::string RandomSuffix() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

void SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: the rename itself has happened
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

Status CheckReplaceableFile(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return IoError(path + ": cannot stat: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode))
    return InvalidArgument(path + ": is " + KindOf(st.st_mode) + "; only a regular file is replaced");
  return Status::Ok();
}

Result<FileReplacement> FileReplacement::Begin(const std::string& target) {
  if (target.empty()) return InvalidArgument("output path is empty");
  FGEMMA_RETURN_IF_ERROR(CheckReplaceableFile(target));
  const size_t slash = target.rfind('/');
  const std::string prefix = slash == std::string::npos ? "" : target.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? target : target.substr(slash + 1);
  if (base.empty()) return InvalidArgument(target + ": names a directory, not a file");
  FileReplacement r;
  r.target_ = target;
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string temp = prefix + "." + base + "." + RandomSuffix() + ".tmp";
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);  // umask applies, as with fopen
    if (fd >= 0) {
      r.fd_ = fd;
      r.temp_ = std::move(temp);
      return r;
    }
    if (errno != EEXIST) return IoError(target + ": cannot open for writing (temporary " + temp + "): " + std::strerror(errno));
  }
  return IoError(target + ": cannot create a temporary file beside it (names keep existing)");
}

FileReplacement::FileReplacement(FileReplacement&& other) noexcept { *this = std::move(other); }

FileReplacement& FileReplacement::operator=(FileReplacement&& other) noexcept {
  if (this != &other) {
    Abandon();
    target_ = std::move(other.target_);
    temp_ = std::move(other.temp_);
    fd_ = std::exchange(other.fd_, -1);
    stream_ = std::exchange(other.stream_, nullptr);
    other.temp_.clear();
  }
  return *this;
}

FileReplacement::~FileReplacement() { Abandon(); }

void FileReplacement::Abandon() {
  if (stream_ != nullptr) {
    std::fclose(stream_);
  } else if (fd_ >= 0) {
    ::close(fd_);
  }
  stream_ = nullptr;
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
}

Status FileReplacement::Write(const void* data, size_t n) {
  if (fd_ < 0 || stream_ != nullptr) return Internal(target_ + ": write on a closed or buffered replacement");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return IoError(temp_ + ": write failed: " + std::strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

std::FILE* FileReplacement::stream() {
  if (stream_ == nullptr && fd_ >= 0) stream_ = ::fdopen(fd_, "wb");
  return stream_;
}

Status FileReplacement::Commit() {
  if (fd_ < 0) return Internal(target_ + ": replacement already committed or abandoned");
  auto fail = [this](const char* what) {
    const std::string message = target_ + ": " + what + " (temporary " + temp_ + "): " + std::strerror(errno);
    Abandon();
    return IoError(message);
  };
  if (stream_ != nullptr && std::fflush(stream_) != 0) return fail("flush failed");
  if (::fsync(fd_) != 0) return fail("fsync failed");
  const int close_result = stream_ != nullptr ? std::fclose(stream_) : ::close(fd_);
  stream_ = nullptr;
  fd_ = -1;
  if (close_result != 0) return fail("close failed");
  // Checked again: the target may have been swapped for a link or a device since Begin. (rename
  // replaces a symlink itself, never its target, so what is left is a narrow race that can only
  // replace a directory entry the writer may write anyway.)
  if (Status st = CheckReplaceableFile(target_); !st.ok()) {
    Abandon();
    return st;
  }
  if (std::rename(temp_.c_str(), target_.c_str()) != 0) return fail("cannot rename the temporary file over it");
  temp_.clear();
  SyncDirectory(DirectoryOf(target_));
  return Status::Ok();
}

Status ReplaceFileContents(const std::string& path, std::string_view contents) {
  FGEMMA_TRY(FileReplacement r, FileReplacement::Begin(path));
  FGEMMA_RETURN_IF_ERROR(r.Write(contents.data(), contents.size()));
  return r.Commit();
}

}  // namespace fgemma
