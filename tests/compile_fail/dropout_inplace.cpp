// tests/compile_fail/dropout_inplace.cpp: must NOT compile. libtorch's DropoutOptions::inplace is not
// supported (tensorgrad's dropout never writes its input); the ctest compile_fail_dropout_inplace
// requires the static_assert's message, which says what to write instead.
#include <tensorgrad.h>

int main() {
  tg::nn::Dropout drop(tg::nn::DropoutOptions(0.5).inplace(true));
  return 0;
}
