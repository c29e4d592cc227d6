#include "server/http_loop.h"

#include <fcntl.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace fgemma::server::http {

using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kReadSize = 16 << 10;     // one recv; a connection buffers at most this unparsed
constexpr size_t kLingerBytes = 1 << 20;   // dropped after an error before the connection is cut
constexpr size_t kTrimBytes = 64 << 10;    // request bytes freed before memory is handed back
// Reads per connection per wake-up: a flood gets 64 KiB at a time, so one pass over every ready
// connection stays short and a /health probe waits for little.
constexpr int kPumpRounds = 4;

const char* Reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string StatusLine(int status) { return "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) + "\r\n"; }

void AppendHeaders(std::string& s, const std::vector<std::pair<std::string, std::string>>& headers) {
  for (const auto& [name, value] : headers) s += name + ": " + value + "\r\n";
}

}  // namespace

std::string SerializeResponse(const Response& r, bool close, bool head_only) {
  std::string s = StatusLine(r.status);
  if (!r.content_type.empty()) s += "Content-Type: " + r.content_type + "\r\n";
  AppendHeaders(s, r.headers);
  s += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  if (close) s += "Connection: close\r\n";
  s += "\r\n";
  if (!head_only) s += r.body;
  return s;
}

// --- ResponseWriter (a worker thread; the socket stays non-blocking) ---

bool ResponseWriter::WriteAll(std::string_view data) {
  written_ = true;
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(timeout_.count())) > 0) continue;
    }
    must_close_ = failed_ = true;
    return false;
  }
  return true;
}

void ResponseWriter::Send(const Response& r) {
  if (r.status >= 400 || !request_.keep_alive) must_close_ = true;
  WriteAll(SerializeResponse(r, must_close_, request_.method == "HEAD"));
}

bool ResponseWriter::BeginStream(int status, const std::string& content_type,
                                 const std::vector<std::pair<std::string, std::string>>& headers) {
  chunked_ = request_.minor_version >= 1;
  if (!chunked_ || !request_.keep_alive) must_close_ = true;
  std::string s = StatusLine(status) + "Content-Type: " + content_type + "\r\n";
  AppendHeaders(s, headers);
  if (chunked_) s += "Transfer-Encoding: chunked\r\n";
  if (must_close_) s += "Connection: close\r\n";
  s += "\r\n";
  return WriteAll(s);
}

bool ResponseWriter::WriteChunk(std::string_view data) {
  if (data.empty()) return !failed_;  // an empty chunk would end the stream
  if (!chunked_) return WriteAll(data);
  char size[24];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string chunk = size;
  chunk.append(data);
  chunk += "\r\n";
  return WriteAll(chunk);
}

void ResponseWriter::EndStream() {
  if (chunked_) WriteAll("0\r\n\r\n");
}

// --- Loop ---

struct Loop::Conn {
  Conn(int fd, const Limits& limits) : fd(fd), parser(limits) {}
  enum class State { kReading, kWriting, kLinger, kDispatched };
  int fd;
  State state = State::kReading;
  RequestParser parser;
  std::string in;   // received, not yet parsed (at most one read)
  std::string out;  // a response being written by the I/O thread
  size_t out_pos = 0;
  bool close_after = false;  // after `out`: shut down and linger
  bool in_request = false;   // a byte of the current request has arrived
  bool head_judged = false;
  size_t requests = 0;       // answered on this connection
  size_t discarded = 0;      // bytes dropped while lingering
  Clock::time_point deadline;
  uint32_t watched = 0;      // registered epoll events (0: not registered)
  std::shared_ptr<void> ticket;
};

struct Loop::Job {
  std::unique_ptr<Conn> conn;
  Request request;
  std::shared_ptr<void> ticket;     // received, not yet answered in full
  std::shared_ptr<void> admission;  // admitted to wait for or hold a session
};

Loop::Loop(LoopOptions options, Handlers handlers) : options_(std::move(options)), handlers_(std::move(handlers)) {
  for (size_t i = 0; i < std::max<size_t>(1, options_.workers); ++i) workers_.emplace_back([this] { WorkerLoop(); });
  trimmer_ = std::thread([this] { TrimLoop(); });
}

// Bounded buffers are freed when a hostile connection ends, but glibc keeps freed heap pages
// (in every thread's arena); they are handed back at most once a second, once requests have
// freed something, on a thread of their own so that no request waits for a trim.
void Loop::TrimLoop() {
  std::unique_lock lock(mu_);
  while (!workers_stop_) {
    trim_cv_.wait_for(lock, std::chrono::seconds(1));
    if (freed_bytes_ < kTrimBytes || workers_stop_) continue;
    freed_bytes_ = 0;
    lock.unlock();
    ::malloc_trim(0);
    lock.lock();
  }
}

Loop::~Loop() {
  Stop();
  {
    std::lock_guard lock(mu_);
    workers_stop_ = true;
  }
  work_cv_.notify_all();
  trim_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  trimmer_.join();
  for (Job& job : jobs_) ::close(job.conn->fd);
  for (auto& c : returned_) ::close(c->fd);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Status Loop::Bind(const std::string& address, int port) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    return IoError(std::string("bad address: ") + ::gai_strerror(rc));
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    // SO_REUSEADDR (restart while old connections are in TIME_WAIT), never SO_REUSEPORT: the port
    // is this server's alone.
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, 1024) != 0) err = errno;
  }
  ::freeaddrinfo(found);
  if (err) {
    if (fd >= 0) ::close(fd);
    return IoError(err == EADDRINUSE ? "port " + std::to_string(port) + " is already in use (another server?)"
                                     : std::string(std::strerror(err)));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  listen_fd_ = fd;
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  for (int watched : {listen_fd_, wake_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = watched;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, watched, &ev);
  }
  return Status::Ok();
}

void Loop::Run() {
  {
    std::lock_guard lock(mu_);
    if (stop_ || listen_fd_ < 0) return;
    running_ = true;
  }
  epoll_event events[256];
  auto last_scan = Clock::now();
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stop_) break;
    }
    const int n = ::epoll_wait(epoll_fd_, events, 256, ready_.empty() ? 50 : 0);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listen_fd_) {
        Accept();
      } else if (fd == wake_fd_) {
        uint64_t count;
        while (::read(wake_fd_, &count, sizeof count) > 0) {
        }
        TakeReturned();
      } else {
        OnEvent(fd, events[i].events);
      }
    }
    std::vector<int> ready;
    ready.swap(ready_);
    for (int fd : ready)
      if (fd < static_cast<int>(conns_.size()) && conns_[fd] && conns_[fd]->state == Conn::State::kReading) Pump(*conns_[fd]);
    const auto now = Clock::now();
    if (now - last_scan >= std::chrono::milliseconds(50)) {
      last_scan = now;
      CheckDeadlines();
    }
  }
  // Stopped: the listener closes; connections still being read are dropped, those a worker is
  // answering finish and are closed by it.
  ::close(listen_fd_);
  for (size_t fd = 0; fd < conns_.size(); ++fd)
    if (conns_[fd]) Close(static_cast<int>(fd));
  std::lock_guard lock(mu_);
  for (auto& c : returned_) ::close(c->fd);
  returned_.clear();
  listen_fd_ = -1;
  loop_done_ = true;
  running_ = false;
  stopped_cv_.notify_all();
}

void Loop::Stop() {
  std::unique_lock lock(mu_);
  stop_ = true;
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
  }
  if (running_) {
    stopped_cv_.wait(lock, [&] { return loop_done_; });
  } else if (listen_fd_ >= 0) {
    ::close(listen_fd_);  // Run() never started (or will return at once)
    listen_fd_ = -1;
  }
}

void Loop::Accept() {
  while (true) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN, or out of descriptors (max_connections keeps below the limit)
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (open_connections_ >= options_.max_connections) {
      const std::string busy = SerializeResponse(
          handlers_.error(503, "too many open connections (" + std::to_string(options_.max_connections) + ")"), true, false);
      [[maybe_unused]] const ssize_t n = ::send(fd, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(fd);
      continue;
    }
    if (static_cast<size_t>(fd) >= conns_.size()) conns_.resize(static_cast<size_t>(fd) + 1);
    conns_[fd] = std::make_unique<Conn>(fd, options_.limits);
    ++open_connections_;
    conns_[fd]->deadline = Clock::now() + options_.idle_timeout;
    Watch(*conns_[fd], EPOLLIN);
  }
}

void Loop::Watch(Conn& c, uint32_t events) {
  if (c.watched == events) return;
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = c.fd;
  ::epoll_ctl(epoll_fd_, c.watched == 0 ? EPOLL_CTL_ADD : events == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD, c.fd, &ev);
  c.watched = events;
}

void Loop::OnEvent(int fd, uint32_t events) {
  if (fd < 0 || static_cast<size_t>(fd) >= conns_.size() || !conns_[fd]) return;
  Conn& c = *conns_[fd];
  switch (c.state) {
    case Conn::State::kReading:
      return Pump(c);
    case Conn::State::kWriting:
      if (events & (EPOLLERR | EPOLLHUP)) return Close(fd);
      return Flush(c);
    case Conn::State::kLinger:
      return Linger(c);
    case Conn::State::kDispatched:
      return;
  }
}

void Loop::Pump(Conn& c) {
  for (int round = 0; round < kPumpRounds; ++round) {
    if (c.in.empty()) {
      char buf[kReadSize];
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n == 0) return Close(c.fd);  // the client is done (a half request is dropped)
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
        return Close(c.fd);
      }
      c.in.assign(buf, static_cast<size_t>(n));
    }
    if (!c.in_request) {
      // The whole request, head and body, must arrive within one deadline from its first byte.
      c.in_request = true;
      c.deadline = Clock::now() + options_.request_timeout;
    }
    c.in.erase(0, c.parser.Feed(c.in));
    if (c.parser.failed()) return Respond(c, handlers_.error(c.parser.error().status, c.parser.error().message), true);
    if (c.parser.head_complete() && !c.head_judged) {
      c.head_judged = true;
      HeadVerdict verdict = handlers_.head(c.parser.request());
      if (verdict.respond)
        return Respond(c, *verdict.respond, verdict.respond->status >= 400 || !c.parser.complete());
      c.ticket = std::move(verdict.ticket);
      if (c.parser.request().expect_continue && !c.parser.complete()) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        [[maybe_unused]] const ssize_t n = ::send(c.fd, kContinue.data(), kContinue.size(), MSG_NOSIGNAL);
      }
    }
    if (c.parser.complete()) return Dispatch(c);
  }
}

void Loop::Respond(Conn& c, const Response& r, bool close) {
  c.ticket.reset();
  const Request& req = c.parser.request();
  if (!req.keep_alive || c.requests + 1 >= options_.keep_alive_max) close = true;
  c.out = SerializeResponse(r, close, c.parser.head_complete() && req.method == "HEAD");
  c.out_pos = 0;
  c.close_after = close;
  c.state = Conn::State::kWriting;
  c.deadline = Clock::now() + options_.write_timeout;
  Flush(c);
}

void Loop::Flush(Conn& c) {
  while (c.out_pos < c.out.size()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_pos += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return Watch(c, EPOLLOUT);
    } else {
      return Close(c.fd);
    }
  }
  c.out.clear();
  AfterWrite(c);
}

void Loop::AfterWrite(Conn& c) {
  ++c.requests;
  {
    std::lock_guard lock(mu_);
    freed_bytes_ += c.parser.request().body.capacity();
  }
  c.parser.Reset();
  c.in_request = c.head_judged = false;
  if (c.close_after) {
    // Nothing after an error is parsed: the client gets our FIN, what it still sends is read and
    // dropped for a moment (closing with unread bytes would reset the connection and could destroy
    // the answer before the client reads it), then the connection is cut.
    ::shutdown(c.fd, SHUT_WR);
    c.in.clear();
    c.state = Conn::State::kLinger;
    c.deadline = Clock::now() + options_.linger;
    Watch(c, EPOLLIN);
    return Linger(c);
  }
  c.state = Conn::State::kReading;
  c.deadline = Clock::now() + options_.idle_timeout;
  Watch(c, EPOLLIN);
  if (!c.in.empty()) ready_.push_back(c.fd);  // a pipelined request, next in order
}

void Loop::Linger(Conn& c) {
  char buf[kReadSize];
  for (int round = 0; round < kPumpRounds; ++round) {
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n > 0) {
      c.discarded += static_cast<size_t>(n);
      if (c.discarded > kLingerBytes) return Close(c.fd);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    return Close(c.fd);
  }
}

void Loop::Dispatch(Conn& c) {
  Request request = std::move(c.parser.request());
  std::shared_ptr<void> ticket = std::move(c.ticket), admission;
  if (std::optional<Response> refusal = handlers_.admit(request, &admission)) return Respond(c, *refusal, true);
  Watch(c, 0);
  c.state = Conn::State::kDispatched;
  Job job{std::move(conns_[c.fd]), std::move(request), std::move(ticket), std::move(admission)};
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
  }
  work_cv_.notify_one();
}

void Loop::Close(int fd) {
  std::unique_ptr<Conn> c = std::move(conns_[fd]);
  if (!c) return;
  {
    std::lock_guard lock(mu_);
    freed_bytes_ += c->parser.request().body.capacity();
  }
  ::close(fd);  // also leaves the epoll set
  --open_connections_;
}

void Loop::CheckDeadlines() {
  const auto now = Clock::now();
  for (size_t fd = 0; fd < conns_.size(); ++fd) {
    Conn* c = conns_[fd].get();
    if (!c || c->state == Conn::State::kDispatched || now < c->deadline) continue;
    if (c->state == Conn::State::kReading) {
      ++timed_out_;
      if (c->in_request) {
        const auto s = std::chrono::duration_cast<std::chrono::milliseconds>(options_.request_timeout).count() / 1000.0;
        char text[64];
        std::snprintf(text, sizeof text, "%g", s);
        Respond(*c, handlers_.error(408, std::string("request (head and body) not received within ") + text + " s"), true);
        continue;
      }
    }
    Close(static_cast<int>(fd));
  }
}

void Loop::TakeReturned() {
  std::vector<std::unique_ptr<Conn>> back;
  {
    std::lock_guard lock(mu_);
    back.swap(returned_);
  }
  for (auto& owned : back) {
    Conn& c = *owned;
    conns_[c.fd] = std::move(owned);
    if (c.requests + 1 >= options_.keep_alive_max) c.close_after = true;
    c.state = Conn::State::kWriting;
    AfterWrite(c);
  }
}

void Loop::WorkerLoop() {
  while (true) {
    Job job;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [&] { return workers_stop_ || !jobs_.empty(); });
      if (workers_stop_) return;  // queued jobs are closed by the destructor
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    ResponseWriter writer(job.conn->fd, job.request, options_.write_timeout);
    try {
      handlers_.serve(job.request, writer, job.admission);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fgemma: internal error in a request handler: %s\n", e.what());
      if (!writer.written()) writer.Send(handlers_.error(500, std::string("internal error: ") + e.what()));
    }
    if (!writer.written()) writer.Send(handlers_.error(500, "internal error: no response"));
    const bool close = writer.must_close() || !job.request.keep_alive;
    const size_t freed = job.request.body.capacity() * 8;  // and what its JSON grew to
    job.request = Request{};
    job.admission.reset();
    job.ticket.reset();
    std::unique_ptr<Conn> conn = std::move(job.conn);
    std::lock_guard lock(mu_);
    freed_bytes_ += freed;
    if (loop_done_) {
      ::close(conn->fd);
      continue;
    }
    conn->close_after = close;
    returned_.push_back(std::move(conn));
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
  }
}

}  // namespace fgemma::server::http
