// The strict HTTP/1.1 request parser on its own (issue 30): framing, limits and the syntax that
// lets two parsers disagree on where a request ends, each refused with its status.
#include "server/http_parser.h"

#include <gtest/gtest.h>

#include <string>

namespace fgemma::server::http {
namespace {

Limits Small() {
  Limits l;
  l.max_request_line = 64;
  l.max_header_line = 64;
  l.max_headers = 4;
  l.max_head_bytes = 200;
  l.max_body = 100;
  l.max_chunk_line = 16;
  return l;
}

// Feeds `text` whole (resuming after the head); returns the bytes consumed.
size_t FeedAll(RequestParser& p, std::string_view text) {
  size_t used = 0;
  while (used < text.size() && !p.complete() && !p.failed()) {
    const size_t n = p.Feed(text.substr(used));
    used += n;
    if (n == 0) break;
  }
  return used;
}

// The status a request is refused with (0: accepted whole).
int StatusOf(std::string_view text, const Limits& limits = Small()) {
  RequestParser p(limits);
  FeedAll(p, text);
  if (p.failed()) return p.error().status;
  return p.complete() ? 0 : -1;
}

TEST(HttpParser, SimpleGetByteByByteEqualsWhole) {
  const std::string text = "GET /health?x=1 HTTP/1.1\r\nHost: a\r\nX-Thing:  v  \r\n\r\n";
  RequestParser whole(Small()), bytes(Small());
  EXPECT_EQ(FeedAll(whole, text), text.size());
  for (char c : text) {
    ASSERT_FALSE(bytes.failed());
    bytes.Feed(std::string_view(&c, 1));
  }
  for (RequestParser* p : {&whole, &bytes}) {
    ASSERT_TRUE(p->complete());
    EXPECT_EQ(p->request().method, "GET");
    EXPECT_EQ(p->request().path, "/health");
    EXPECT_EQ(p->request().target, "/health?x=1");
    ASSERT_NE(p->request().Find("x-thing"), nullptr);
    EXPECT_EQ(*p->request().Find("x-thing"), "v");
    EXPECT_TRUE(p->request().keep_alive);
    EXPECT_FALSE(p->request().HasBody());
  }
}

TEST(HttpParser, StopsAfterTheHeadThenReadsTheBodyAndNoFurther) {
  const std::string text = "POST /c HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\n";
  RequestParser p(Small());
  const size_t head = p.Feed(text);
  EXPECT_TRUE(p.head_complete());
  EXPECT_FALSE(p.complete());
  EXPECT_EQ(text.substr(head, 5), "hello") << "nothing of the body is read with the head";
  const size_t body = p.Feed(std::string_view(text).substr(head));
  EXPECT_EQ(body, 5u) << "the pipelined request that follows is left alone";
  ASSERT_TRUE(p.complete());
  EXPECT_EQ(p.request().body, "hello");
  // The next request on the connection after Reset().
  p.Reset();
  FeedAll(p, text.substr(head + body) + "Host: b\r\n\r\n");
  EXPECT_TRUE(p.complete());
  EXPECT_EQ(p.request().path, "/");
}

TEST(HttpParser, Chunked) {
  RequestParser p(Small());
  FeedAll(p, "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n"
             "5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n");
  ASSERT_TRUE(p.complete()) << p.error().message;
  EXPECT_EQ(p.request().body, "hello world");
  EXPECT_EQ(p.request().framing, Framing::kChunked);
  EXPECT_EQ(p.request().Find("x-trailer"), nullptr) << "trailers are not headers";
}

TEST(HttpParser, ChunkSyntaxIsStrict) {
  const std::string head = "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
  EXPECT_EQ(StatusOf(head + "5\r\nhelloXX\r\n0\r\n\r\n"), 400) << "chunk data not followed by CRLF";
  EXPECT_EQ(StatusOf(head + "5\r\nhello\n0\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf(head + "x5\r\nhello\r\n0\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf(head + "-5\r\nhello\r\n0\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf(head + "5 x\r\nhello\r\n0\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf(head + "5\nhello\r\n0\r\n\r\n"), 400) << "bare LF";
  EXPECT_EQ(StatusOf(head + "65\r\n"), 413) << "a chunk past max_body is refused from its size";
  EXPECT_EQ(StatusOf(head + "ffffffffffff\r\n"), 413);
  // Issue 30 finding 1: a chunk-size line that never ends is refused at its limit.
  RequestParser p(Small());
  const std::string zeros(1 << 20, '0');
  const size_t used = FeedAll(p, head + zeros);
  ASSERT_TRUE(p.failed());
  EXPECT_EQ(p.error().status, 400);
  EXPECT_LT(used, head.size() + 64) << "the parser held more than its chunk-line limit";
}

TEST(HttpParser, OneValidContentLength) {
  const std::string head = "POST /c HTTP/1.1\r\nHost: a\r\n";
  EXPECT_EQ(StatusOf(head + "Content-Length: 2\r\n\r\nab"), 0);
  EXPECT_EQ(StatusOf(head + "Content-Length: 2\r\nContent-Length: 2\r\n\r\nab"), 400);
  EXPECT_EQ(StatusOf(head + "Content-Length: 2\r\nContent-Length: 3\r\n\r\nab"), 400);
  EXPECT_EQ(StatusOf(head + "Content-Length: +2\r\n\r\nab"), 400);
  EXPECT_EQ(StatusOf(head + "Content-Length: -2\r\n\r\nab"), 400);
  EXPECT_EQ(StatusOf(head + "Content-Length: 2, 2\r\n\r\nab"), 400);
  EXPECT_EQ(StatusOf(head + "Content-Length: 0x2\r\n\r\nab"), 400);
  EXPECT_EQ(StatusOf(head + "Content-Length: 1 1\r\n\r\nab"), 400);
  EXPECT_EQ(StatusOf(head + "Content-Length:\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf(head + "Content-Length: 101\r\n\r\n"), 413) << "refused from the head";
  EXPECT_EQ(StatusOf(head + "Content-Length: 99999999999999999999999999\r\n\r\n"), 413);
  EXPECT_EQ(StatusOf(head + "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf(head + "Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf(head + "Transfer-Encoding: gzip, chunked\r\n\r\n"), 501);
  EXPECT_EQ(StatusOf(head + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("POST /c HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
}

TEST(HttpParser, HeadLimits) {
  EXPECT_EQ(StatusOf("GET /" + std::string(100, 'a') + " HTTP/1.1\r\nHost: a\r\n\r\n"), 414);
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(100, 'a') + "\r\n\r\n"), 431);
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\n\r\n"), 431);
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 3; ++i) many += "Host" + std::to_string(i) + ": " + std::string(50, 'v') + "\r\n";
  Limits wide = Small();
  wide.max_headers = 100;
  EXPECT_EQ(StatusOf(many + "Host: a\r\n\r\n", wide), 431) << "the whole head is bounded";
  // A line without an end is refused once past its limit, however it arrives.
  RequestParser p(Small());
  size_t used = 0;
  const std::string endless(1 << 16, 'G');
  for (size_t i = 0; i < endless.size() && !p.failed(); i += 7) used += p.Feed(std::string_view(endless).substr(i, 7));
  EXPECT_TRUE(p.failed());
  EXPECT_LT(used, 80u);
  // Leading empty lines count against the head too.
  EXPECT_EQ(StatusOf(std::string(300, '\n')), 400);
  EXPECT_EQ(StatusOf(std::string(150, '\r') + std::string(150, '\n')), 414);
}

TEST(HttpParser, SyntaxThatSplitsRequestsIsRefused) {
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\nHost: a\r\n\r\n"), 400) << "bare LF";
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n continued\r\n\r\n"), 400) << "obs-fold";
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\nHost: a\r\nContent-Length : 1\r\n\r\nx"), 400) << "space before ':'";
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\nHost: a\r\nX: a\x01z\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\nHost: a\r\nX: a\rz\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf(std::string("GET / HTTP/1.1\r\nHost: a\r\nX: a") + '\0' + "z\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\n\r\n"), 400) << "HTTP/1.1 needs Host";
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("GET  / HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("GET http://x/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("GET / HTTP/2.0\r\nHost: a\r\n\r\n"), 505);
  EXPECT_EQ(StatusOf("GET / HTTX/1.1\r\nHost: a\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("G(T / HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\nHost: a\r\nExpect: something\r\n\r\n"), 417);
}

TEST(HttpParser, ConnectionAndExpect) {
  RequestParser p(Small());
  FeedAll(p, "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Close\r\n\r\n");
  ASSERT_TRUE(p.complete());
  EXPECT_FALSE(p.request().keep_alive);
  p.Reset();
  FeedAll(p, "GET / HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(p.complete());
  EXPECT_FALSE(p.request().keep_alive);
  p.Reset();
  FeedAll(p, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_TRUE(p.request().keep_alive);
  p.Reset();
  p.Feed("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\n");
  EXPECT_TRUE(p.head_complete());
  EXPECT_TRUE(p.request().expect_continue);
}

}  // namespace
}  // namespace fgemma::server::http
