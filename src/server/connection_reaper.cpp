#include "server/connection_reaper.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <set>
#include <string_view>
#include <vector>

namespace fgemma::server {
namespace {

// "addr|port" of a socket address as httplib reports a request's remote_addr and remote_port.
bool PeerOf(const sockaddr_storage& ss, std::string* peer, int* port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
    *port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    *port = ntohs(a->sin6_port);
  } else {
    return false;
  }
  if (peer) *peer = std::string(text) + "|" + std::to_string(*port);
  return true;
}

// The peer of `fd` when it is a connected TCP socket whose local port is `port`.
bool ConnectionOn(int fd, int port, std::string* peer) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  sockaddr_storage local{}, remote{};
  socklen_t n = sizeof local;
  int local_port = 0, remote_port = 0;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &n) != 0 || !PeerOf(local, nullptr, &local_port) ||
      local_port != port)
    return false;
  n = sizeof remote;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &n) != 0) return false;  // the listening socket
  return PeerOf(remote, peer, &remote_port);
}

// True when the socket's unread bytes hold a whole request head: a connection queued for a busy
// worker is waiting on the server, not slow, and must not be cut (a /health probe queued behind slow
// clients is one).
bool RequestWaiting(int fd) {
  char head[16384];
  const ssize_t n = recv(fd, head, sizeof head, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 && std::string_view(head, static_cast<size_t>(n)).find("\r\n\r\n") != std::string_view::npos;
}

}  // namespace

void ConnectionReaper::Start(int port) {
  port_ = port;
  thread_ = std::thread([this] { Loop(); });
}

void ConnectionReaper::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<void> ConnectionReaper::Busy(const std::string& addr, int port) {
  const std::string peer = addr + "|" + std::to_string(port);
  {
    std::lock_guard lock(mu_);
    ++busy_[peer];
  }
  return std::shared_ptr<void>(nullptr, [this, peer](void*) {
    std::lock_guard lock(mu_);
    if (--busy_[peer] == 0) busy_.erase(peer);
    // The connection's idle time (waiting for its next request) starts now.
    for (auto& [fd, c] : conns_)
      if (c.peer == peer) c.since = std::chrono::steady_clock::now();
  });
}

void ConnectionReaper::Touch(const std::string& addr, int port) {
  const std::string peer = addr + "|" + std::to_string(port);
  std::lock_guard lock(mu_);
  for (auto& [fd, c] : conns_)
    if (c.peer == peer) c.since = std::chrono::steady_clock::now();
}

void ConnectionReaper::Loop() {
  std::unique_lock lock(mu_);
  const auto period = std::max(std::chrono::milliseconds(50), std::min(limit_ / 4, std::chrono::milliseconds(500)));
  while (!wake_.wait_for(lock, period, [this] { return stop_; })) {
    lock.unlock();
    Scan();
    lock.lock();
  }
}

void ConnectionReaper::Scan() {
  std::map<int, std::string> live;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(dir)) {
      char* end = nullptr;
      const long fd = std::strtol(e->d_name, &end, 10);
      std::string peer;
      if (end != e->d_name && *end == '\0' && ConnectionOn(static_cast<int>(fd), port_, &peer))
        live[static_cast<int>(fd)] = peer;
    }
    closedir(dir);
  }
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  for (auto it = conns_.begin(); it != conns_.end();)
    it = live.count(it->first) ? std::next(it) : conns_.erase(it);
  // Two passes: every stale connection is judged before any is cut, because cutting one frees a
  // worker that may at once read a queued request, leaving nothing to peek at on its socket.
  std::vector<int> stale;
  for (const auto& [fd, peer] : live) {
    auto [it, fresh] = conns_.try_emplace(fd, Conn{peer, now});
    if (!fresh && it->second.peer != peer) it->second = Conn{peer, now};  // the fd was reused
    if (busy_.count(peer) || RequestWaiting(fd)) {
      it->second.since = now;  // served, or waiting on the server rather than slow
      continue;
    }
    if (now - it->second.since > limit_) stale.push_back(fd);
  }
  for (const int fd : stale) {
    auto it = conns_.find(fd);
    std::string again;
    if (ConnectionOn(fd, port_, &again) && again == it->second.peer) {
      // Wakes the worker blocked reading it; httplib then closes the socket itself.
      shutdown(fd, SHUT_RDWR);
      ++reaped_;
      conns_.erase(it);
    }
  }
}

}  // namespace fgemma::server
