#include "util/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "util/file_replace.h"

namespace fgemma {

MappedFile::~MappedFile() {
  if (data_ != nullptr && size_ > 0) munmap(const_cast<uint8_t*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), path_(std::move(other.path_)) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr && size_ > 0) munmap(const_cast<uint8_t*>(data_), size_);
    data_ = other.data_;
    size_ = other.size_;
    path_ = std::move(other.path_);
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

namespace {

// Opens `path` for reading without blocking (a FIFO's open would wait for a writer) and refuses
// anything but a regular file (a FIFO, a socket, /dev/zero or a directory), so a reader never hangs
// and never reads without end. Returns the descriptor and fills *st.
Result<int> OpenRegularForReading(const std::string& path, struct stat* st) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": cannot open: " + std::strerror(errno));
  }
  if (fstat(fd, st) != 0) {
    const int err = errno;
    ::close(fd);
    return IoError(path + ": cannot stat: " + std::strerror(err));
  }
  if (S_ISDIR(st->st_mode)) {
    ::close(fd);
    return InvalidArgument(path + ": is a directory, expected a file");
  }
  if (!S_ISREG(st->st_mode)) {
    ::close(fd);
    return InvalidArgument(path + ": is not a regular file (a device, FIFO or socket), expected a file");
  }
  return fd;
}

}  // namespace

Result<MappedFile> MappedFile::Open(const std::string& path) {
  struct stat st {};
  FGEMMA_TRY(const int fd, OpenRegularForReading(path, &st));
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size > static_cast<uint64_t>(std::numeric_limits<size_t>::max() / 2)) {
    ::close(fd);
    return OutOfRange(path + ": file of " + std::to_string(file_size) +
                      " bytes cannot be mapped in this process's address space (32-bit build)");
  }
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(file_size);
  if (file.size_ > 0) {
    void* p = mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      file.size_ = 0;
      return IoError(path + ": mmap of " + std::to_string(file_size) + " bytes failed: " + std::strerror(err));
    }
    file.data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return file;
}

Result<std::string> ReadFileToString(const std::string& path) {
  struct stat st {};
  FGEMMA_TRY(const int fd, OpenRegularForReading(path, &st));
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return IoError(path + ": read failed: " + std::strerror(err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

Status WriteStringToFile(const std::string& path, const std::string& contents) {
  return ReplaceFileContents(path, contents);
}

bool FileExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void ReleaseMappedPages(const void* p, size_t n) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace fgemma
