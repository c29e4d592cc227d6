// Decode allocates nothing once the session exists: counted by replacing global operator new.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "model/lora_adapter.h"
#include "runtime/session.h"
#include "test_support.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace fgemma {
namespace {

void ExpectNoAllocation(std::shared_ptr<const LoraAdapter> lora) {
  auto model = std::shared_ptr<const Model>(Model::Load(test::FixturePath("models/mini-bf16")).value());
  SessionOptions o;
  o.lora = std::move(lora);
  o.context = 128;
  o.threads = 2;
  o.max_batch = 16;
  auto s = Session::Create(model, o).value();
  std::vector<int32_t> prompt(40);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(1000 + 37 * i);
  std::vector<int32_t> candidates = {5, 77, 1000, 262143};
  HeadRequest heads[2];
  heads[0].index = 39;
  heads[1].index = 20;
  heads[1].candidates = candidates;

  g_allocations = 0;
  g_counting = true;
  Status st = s->Evaluate(prompt, heads);  // 3 chunks of <= 16, two head requests
  int32_t next = heads[0].argmax;
  for (int i = 0; i < 20 && st.ok(); ++i) {
    HeadRequest h;
    st = s->Evaluate(std::span<const int32_t>(&next, 1), std::span<HeadRequest>(&h, 1));
    next = h.argmax;
  }
  g_counting = false;
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(g_allocations.load(), 0);
}

TEST(NoAllocation, DecodeStepsAndChunkedPrefillAllocateNothing) { ExpectNoAllocation(nullptr); }

// The adapter's scratch is sized when the session is made.
TEST(NoAllocation, WithALoraAdapterToo) {
  auto model = Model::Load(test::FixturePath("models/mini-bf16")).value();
  auto lora = LoraAdapter::Load(test::FixturePath("lora/mini-lora-s14"), model->config()).value();
  ExpectNoAllocation(lora);
}

}  // namespace
}  // namespace fgemma
