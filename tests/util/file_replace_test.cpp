// Safe file replacement and reading (issue 16, finding 6): a link planted at the old fixed temporary
// name or at the target is never written through, a device or FIFO or directory at the target is an
// error naming it, readers neither hang on a FIFO nor read /dev/zero forever, and concurrent writers
// leave one whole file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <thread>

#include "test_support.h"
#include "util/file_replace.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

namespace fs = std::filesystem;

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Runs `fn` on its own thread; a call still running after 10 s fails the test and ends the process
// (a hung open would otherwise hang the test binary until CTest's timeout).
Status Within10s(std::function<Status()> fn) {
  auto done = std::make_shared<std::promise<Status>>();
  std::future<Status> result = done->get_future();
  std::thread([done, fn = std::move(fn)] { done->set_value(fn()); }).detach();
  if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "call still blocked after 10 s";
    std::_Exit(1);
  }
  return result.get();
}

// Entries of `dir` besides `keep`: temporaries left behind.
std::vector<std::string> Leftovers(const std::string& dir, const std::vector<std::string>& keep) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (std::find(keep.begin(), keep.end(), name) == keep.end()) out.push_back(name);
  }
  return out;
}

TEST(FileReplace, WritesAndReplacesARegularFile) {
  const std::string dir = test::TempDir();
  const std::string path = dir + "/out.bin";
  ASSERT_TRUE(ReplaceFileContents(path, "first").ok());
  ASSERT_TRUE(ReplaceFileContents(path, "second").ok());
  EXPECT_EQ(ReadFileToString(path).value(), "second");
  EXPECT_TRUE(Leftovers(dir, {"out.bin"}).empty());
}

TEST(FileReplace, LinkAtTheOldFixedTemporaryNameIsNotFollowed) {
  const std::string dir = test::TempDir();
  ASSERT_TRUE(ReplaceFileContents(dir + "/victim", "precious").ok());
  fs::create_symlink(dir + "/victim", dir + "/c.kv.tmp");
  ASSERT_TRUE(ReplaceFileContents(dir + "/c.kv", "cache").ok());
  EXPECT_EQ(ReadFileToString(dir + "/victim").value(), "precious");
  EXPECT_EQ(ReadFileToString(dir + "/c.kv").value(), "cache");
  EXPECT_TRUE(fs::is_symlink(dir + "/c.kv.tmp"));
}

TEST(FileReplace, LinkAtTheTargetIsRefused) {
  const std::string dir = test::TempDir();
  ASSERT_TRUE(ReplaceFileContents(dir + "/victim", "precious").ok());
  fs::create_symlink(dir + "/victim", dir + "/c.kv");
  Status st = ReplaceFileContents(dir + "/c.kv", "cache");
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(st.message(), dir + "/c.kv: is a symbolic link; only a regular file is replaced")) << st.ToString();
  EXPECT_TRUE(fs::is_symlink(dir + "/c.kv"));
  EXPECT_EQ(ReadFileToString(dir + "/victim").value(), "precious");
  EXPECT_TRUE(Leftovers(dir, {"victim", "c.kv"}).empty());
}

TEST(FileReplace, FifoDirectoryAndDeviceAreErrorsNotHangs) {
  const std::string dir = test::TempDir();
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Status st = Within10s([&] { return ReplaceFileContents(fifo, "x"); });
  EXPECT_TRUE(Contains(st.message(), fifo + ": is a FIFO")) << st.ToString();
  st = Within10s([&] { return ReadFileToString(fifo).status(); });
  EXPECT_TRUE(Contains(st.message(), fifo + ": is not a regular file")) << st.ToString();
  st = Within10s([&] { return MappedFile::Open(fifo).status(); });
  EXPECT_TRUE(Contains(st.message(), fifo + ": is not a regular file")) << st.ToString();
  EXPECT_TRUE(fs::is_fifo(fifo));

  fs::create_directory(dir + "/d");
  st = ReplaceFileContents(dir + "/d", "x");
  EXPECT_TRUE(Contains(st.message(), dir + "/d: is a directory")) << st.ToString();

  st = ReplaceFileContents("/dev/null", "x");
  EXPECT_TRUE(Contains(st.message(), "/dev/null: is a character device")) << st.ToString();
  struct stat s {};
  ASSERT_EQ(::stat("/dev/null", &s), 0);
  EXPECT_TRUE(S_ISCHR(s.st_mode));
  // /dev/zero would be read forever.
  st = Within10s([] { return ReadFileToString("/dev/zero").status(); });
  EXPECT_TRUE(Contains(st.message(), "/dev/zero: is not a regular file")) << st.ToString();
}

TEST(FileReplace, UnfinishedReplacementLeavesNothing) {
  const std::string dir = test::TempDir();
  {
    auto r = FileReplacement::Begin(dir + "/out");
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->Write("abc", 3).ok());
    EXPECT_TRUE(fs::exists(r->temp_path()));
    EXPECT_NE(r->temp_path(), dir + "/out.tmp");
  }
  EXPECT_TRUE(Leftovers(dir, {}).empty());
}

TEST(FileReplace, ConcurrentWritersLeaveOneWholeFile) {
  const std::string dir = test::TempDir();
  const std::string path = dir + "/shared";
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      const std::string body(1 << 18, static_cast<char>('a' + t));
      for (int i = 0; i < 5; ++i)
        if (!ReplaceFileContents(path, body).ok()) ++failures;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  const std::string got = ReadFileToString(path).value();
  ASSERT_EQ(got.size(), 1u << 18);
  EXPECT_EQ(got.find_first_not_of(got[0]), std::string::npos);
  EXPECT_TRUE(Leftovers(dir, {"shared"}).empty());
}

}  // namespace
}  // namespace fgemma
