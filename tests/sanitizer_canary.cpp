// tests/sanitizer_canary.cpp: deliberately broken code, built only when TENSORGRAD_SANITIZE is set.
// tools/sanitizer_canary.sh runs one mode and fails CI unless the sanitizer stops it with a report,
// so a sanitizer build that silently checks nothing cannot pass. Modes (argv[1]):
//   heap-overflow, use-after-free  plain new[]/delete[] bugs (AddressSanitizer)
//   tensor-overflow, tensor-use-after-free  the same through tensorgrad's caching CPU allocator
//   signed-overflow  INT_MAX + 1 (UndefinedBehaviorSanitizer);  data-race  two unsynchronized writers (ThreadSanitizer)
#include <tensorgrad.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

// volatile/noinline: keep the optimizer from proving the bugs away.
volatile int g_sink = 0;

__attribute__((noinline)) int read_at(const int* p, int i) { return p[i]; }
__attribute__((noinline)) float read_float_at(const float* p, int64_t i) { return p[i]; }

int heap_overflow() {
  int* p = new int[7];
  for (int i = 0; i < 7; ++i) p[i] = i;
  g_sink = read_at(p, 7 + g_sink);   // one past the end
  delete[] p;
  return 0;
}

int use_after_free() {
  int* p = new int[7]();
  delete[] p;
  g_sink = read_at(p, g_sink);
  return 0;
}

// 3 floats = 12 bytes; the allocator hands out a 64-byte block, so only poisoning of the slack catches this.
int tensor_overflow() {
  tg::RawTensor t = tg::prim::full({3}, 1.0, tg::kFloat32);
  g_sink = static_cast<int>(read_float_at(t.data<float>(), 3 + g_sink));
  return 0;
}

// The block goes back to the allocator's cache (not to free()), so only poisoning of cached blocks catches this.
int tensor_use_after_free() {
  const float* p = nullptr;
  {
    tg::RawTensor t = tg::prim::full({5}, 1.0, tg::kFloat32);
    p = t.data<float>();
  }
  g_sink = static_cast<int>(read_float_at(p, g_sink));
  return 0;
}

int signed_overflow() {
  volatile int big = INT_MAX;
  int x = big;
  x += 1 + g_sink;   // signed overflow: undefined behaviour
  g_sink = x;
  return 0;
}

int g_shared = 0;
int data_race() {
  std::thread a([] {
    for (int i = 0; i < 100000; ++i) ++g_shared;
  });
  std::thread b([] {
    for (int i = 0; i < 100000; ++i) ++g_shared;
  });
  a.join();
  b.join();
  g_sink = g_shared;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (!std::strcmp(mode, "heap-overflow")) return heap_overflow();
  if (!std::strcmp(mode, "use-after-free")) return use_after_free();
  if (!std::strcmp(mode, "tensor-overflow")) return tensor_overflow();
  if (!std::strcmp(mode, "tensor-use-after-free")) return tensor_use_after_free();
  if (!std::strcmp(mode, "signed-overflow")) return signed_overflow();
  if (!std::strcmp(mode, "data-race")) return data_race();
  std::fprintf(stderr,
               "usage: %s heap-overflow|use-after-free|tensor-overflow|tensor-use-after-free|signed-overflow|data-race\n",
               argv[0]);
  return 2;
}
