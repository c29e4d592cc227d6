// Closes connections that hold an HTTP worker without sending a request (slowloris).
//
// cpp-httplib (0.11) bounds each recv by the read timeout but not a whole request's headers: a
// client sending one byte every couple of seconds keeps its worker forever, and as many such
// clients as workers starve everyone, /health included. httplib does not expose its accepted
// sockets, so a watchdog thread finds them itself (the process's sockets whose local port is the
// server's and which have a peer) and shuts down any that has been connected, or idle since its
// last request ended, for longer than the limit while no request of it is being handled. A request
// being handled (its body read under the handler's own deadline, its answer generated and
// streamed) is marked busy by its handler and never reaped.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace fgemma::server {

class ConnectionReaper {
 public:
  explicit ConnectionReaper(std::chrono::milliseconds limit) : limit_(limit) {}
  ~ConnectionReaper() { Stop(); }
  void Start(int port);
  void Stop();

  // Marks the connection from addr:port busy while the returned object lives.
  std::shared_ptr<void> Busy(const std::string& addr, int port);
  // A request from addr:port has just arrived: its connection's idle time starts again.
  void Touch(const std::string& addr, int port);
  uint64_t reaped() const { return reaped_.load(); }

 private:
  struct Conn {
    std::string peer;
    std::chrono::steady_clock::time_point since;
  };
  void Loop();
  void Scan();

  const std::chrono::milliseconds limit_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::map<int, Conn> conns_;              // fd -> peer and the start of its idle time
  std::map<std::string, int> busy_;        // peer -> requests being handled
  std::atomic<uint64_t> reaped_{0};
  std::thread thread_;
};

}  // namespace fgemma::server
