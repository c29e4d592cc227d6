// The server's HTTP/1.1 connection loop: one I/O thread reads every connection, a fixed set of
// workers answers the requests that need a session.
//
// The I/O thread (epoll, non-blocking sockets) reads each request through an http::RequestParser
// under one deadline for the whole request (head and body, not per read), judges the head before
// any body byte is read (Handlers::head: routes, auth, 401/404/413/415/429/503, /health and
// /v1/models answered right there), and hands only complete requests to the workers through a
// queue that Handlers::admit bounds. So a slow, endless or oversized request holds a connection
// slot and at most its Limits' bytes, never a worker, and /health is answered while every worker
// is busy. After any error response the connection is closed (lingering briefly so the client can
// read the answer) and nothing after the failed request is parsed. Pipelined requests are served
// one at a time, in order: the connection is not read while its request is being answered.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/http_parser.h"
#include "util/status.h"

namespace fgemma::server::http {

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

// "HTTP/1.1 <status> <reason>" and the headers (Content-Length, Connection: close when `close`);
// the body unless `head_only`.
std::string SerializeResponse(const Response& r, bool close, bool head_only);

// Where a worker writes its answer, whole or as a chunked stream. Writes block the worker at most
// the write timeout each; a failed write marks the connection for closing.
class ResponseWriter {
 public:
  ResponseWriter(int fd, const Request& request, std::chrono::milliseconds timeout)
      : fd_(fd), request_(request), timeout_(timeout) {}
  void Send(const Response& r);
  // A response of unknown length: chunked (HTTP/1.0: unframed, then the connection closes).
  bool BeginStream(int status, const std::string& content_type,
                   const std::vector<std::pair<std::string, std::string>>& headers);
  bool WriteChunk(std::string_view data);  // false once the client is gone
  void EndStream();
  // The connection cannot take another request (an error was answered, a write failed, the
  // client asked to close).
  bool must_close() const { return must_close_; }
  bool written() const { return written_; }

 private:
  bool WriteAll(std::string_view data);
  int fd_;
  const Request& request_;
  std::chrono::milliseconds timeout_;
  bool chunked_ = false;
  bool must_close_ = false;
  bool failed_ = false;  // a write failed: the client is gone
  bool written_ = false;
};

struct LoopOptions {
  Limits limits;
  std::chrono::milliseconds request_timeout{5000};  // the whole request, head and body, from its first byte
  std::chrono::milliseconds idle_timeout{5000};     // waiting for a request's first byte
  std::chrono::milliseconds write_timeout{5000};    // a write that makes no progress that long fails
  std::chrono::milliseconds linger{1000};           // reading and dropping after an error, before close
  size_t keep_alive_max = 100;                      // requests per connection
  size_t workers = 64;
  size_t max_connections = 1000;  // beyond: 503 and close at accept
};

struct HeadVerdict {
  // A response now (the connection closes after an error status), or read the body.
  std::optional<Response> respond;
  // With a body to read: held until the request is answered, or dropped with the connection.
  std::shared_ptr<void> ticket;
};

struct Handlers {
  // I/O thread, must not block: the head is complete, no body byte has been read.
  std::function<HeadVerdict(const Request&)> head;
  // I/O thread: the body is complete; a refusal (429), or nullopt to queue it for a worker, with
  // `*admission` set to what counts it as admitted (released by `serve` or after the answer).
  std::function<std::optional<Response>(const Request&, std::shared_ptr<void>* admission)> admit;
  // A worker thread: answers the request. It may release `admission` as soon as the work admission
  // bounds is done (before the answer's last bytes: a client that has read its answer and asks
  // again is then not refused for its own finished request).
  std::function<void(Request&, ResponseWriter&, std::shared_ptr<void>& admission)> serve;
  // Any thread: the response for an error the loop itself meets (parse errors, 408, 503).
  std::function<Response(int status, const std::string& message)> error;
};

class Loop {
 public:
  Loop(LoopOptions options, Handlers handlers);
  ~Loop();
  // Binds `address` (numeric IPv4 or IPv6) at `port` (0: any free port) and listens.
  Status Bind(const std::string& address, int port);
  int port() const { return port_; }
  // Serves until Stop().
  void Run();
  // Closes the listening socket (on return it is closed) and ends Run(); requests being answered
  // by workers still finish.
  void Stop();
  // Connections closed because a request (or the first byte of one) did not arrive in time.
  uint64_t timed_out() const { return timed_out_.load(); }

 private:
  struct Conn;
  struct Job;
  void Accept();
  void OnEvent(int fd, uint32_t events);
  void Pump(Conn& c);
  void Respond(Conn& c, const Response& r, bool close);
  void Flush(Conn& c);
  void AfterWrite(Conn& c);
  void Linger(Conn& c);
  void Dispatch(Conn& c);
  void Close(int fd);
  void Watch(Conn& c, uint32_t events);
  void CheckDeadlines();
  void TakeReturned();
  void WorkerLoop();
  void TrimLoop();

  LoopOptions options_;
  Handlers handlers_;
  int listen_fd_ = -1, epoll_fd_ = -1, wake_fd_ = -1;
  int port_ = 0;
  std::vector<std::unique_ptr<Conn>> conns_;  // by fd; null: not a connection of the I/O thread
  std::vector<int> ready_;                    // connections with buffered bytes to parse
  size_t open_connections_ = 0;               // of the I/O thread and of workers
  std::atomic<uint64_t> timed_out_{0};
  std::atomic<size_t> dispatched_{0};

  std::mutex mu_;  // guards what follows
  std::condition_variable work_cv_, stopped_cv_, trim_cv_;
  std::deque<Job> jobs_;
  std::vector<std::unique_ptr<Conn>> returned_;  // answered by a worker, back to the I/O thread
  bool stop_ = false, loop_done_ = false, running_ = false, workers_stop_ = false;
  std::vector<std::thread> workers_;
  std::thread trimmer_;
  size_t freed_bytes_ = 0;  // request buffers freed since the last malloc_trim
};

}  // namespace fgemma::server::http
