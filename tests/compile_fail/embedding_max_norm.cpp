// tests/compile_fail/embedding_max_norm.cpp: must NOT compile. libtorch's EmbeddingOptions::max_norm
// (renormalizing looked-up rows in place) is not supported; the ctest compile_fail_embedding_max_norm
// requires the static_assert's message, which says what to write instead.
#include <tensorgrad.h>

int main() {
  tg::nn::Embedding emb(tg::nn::EmbeddingOptions(10, 3).max_norm(1.0));
  return 0;
}
