// tests/compile_fail/stateful_base.cpp: must NOT compile. A dataset derived from libtorch's StatefulDataset,
// which tensorgrad does not offer; the ctest compile_fail_stateful_base requires the static_assert's
// message, which names what to derive from instead.
#include <tensorgrad.h>

struct Stream : tg::data::datasets::StatefulDataset<Stream> {};

int main() {
  Stream stream;
  return 0;
}
