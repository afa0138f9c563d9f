// tests/compile_fail/embedding_sparse.cpp: must NOT compile. libtorch's EmbeddingOptions::sparse is
// not supported (Embedding's gradient is dense); the ctest compile_fail_embedding_sparse requires the
// static_assert's message.
#include <tensorgrad.h>

int main() {
  tg::nn::Embedding emb(tg::nn::EmbeddingOptions(10, 3).sparse(true));
  return 0;
}
