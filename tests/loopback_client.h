// Talking to a test server over loopback: a server on the mini model at an ephemeral port, an
// httplib client for it, and raw sockets for what httplib will not send (trickled bytes, chunked
// floods, half requests). Shared by the server tests and the adversarial load test.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "server/server.h"
#include "test_support.h"

namespace fgemma::server::loopback {

// A started server on the mini model (bf16) at a port the kernel picks; null (and a test failure)
// when it cannot start.
inline std::unique_ptr<Server> StartServer(ServerOptions o) {
  o.model_path = test::FixturePath("models/mini-bf16");
  o.port = 0;
  auto srv = Server::Create(o);
  EXPECT_TRUE(srv.ok()) << srv.status().ToString();
  if (!srv.ok()) return nullptr;
  EXPECT_TRUE(srv.value()->Start().ok());
  return std::move(srv).value();
}

inline httplib::Client ClientFor(const Server& s) {
  httplib::Client c("127.0.0.1", s.port());
  c.set_read_timeout(120, 0);
  return c;
}

// A raw TCP connection to 127.0.0.1:port; -1 when refused.
inline int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends all of `s`; false once the server has closed or reset the connection.
inline bool SendAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Reads until the server closes the connection (*closed = true) or stays quiet `quiet_ms`.
inline std::string ReadUntilClose(int fd, int quiet_ms, bool* closed = nullptr) {
  std::string out;
  char buf[16384];
  pollfd p{fd, POLLIN, 0};
  if (closed) *closed = false;
  while (poll(&p, 1, quiet_ms) > 0) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      if (closed) *closed = true;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// The status codes of the responses in `text`, in order, each found by the framing of the one
// before it (Content-Length, chunked, or the rest of the text); interim 100s are skipped.
inline std::vector<int> StatusesIn(const std::string& text) {
  std::vector<int> codes;
  size_t pos = 0;
  while (text.compare(pos, 9, "HTTP/1.1 ") == 0) {
    const int code = std::atoi(text.c_str() + pos + 9);
    const size_t head_end = text.find("\r\n\r\n", pos);
    if (head_end == std::string::npos) break;
    std::string head = text.substr(pos, head_end - pos);
    for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    pos = head_end + 4;
    if (code == 100) continue;
    codes.push_back(code);
    if (const size_t cl = head.find("\r\ncontent-length: "); cl != std::string::npos) {
      pos += std::strtoull(head.c_str() + cl + 18, nullptr, 10);
    } else if (head.find("\r\ntransfer-encoding: chunked") != std::string::npos) {
      while (pos < text.size()) {
        const size_t size = std::strtoull(text.c_str() + pos, nullptr, 16);
        const size_t line_end = text.find("\r\n", pos);
        if (line_end == std::string::npos) return codes;
        pos = line_end + 2 + size + 2;
        if (size == 0) break;
      }
    } else {
      break;
    }
  }
  return codes;
}

}  // namespace fgemma::server::loopback
