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

#include <memory>
#include <string>

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

}  // namespace fgemma::server::loopback
