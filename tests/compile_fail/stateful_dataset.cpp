// tests/compile_fail/stateful_dataset.cpp: must NOT compile. libtorch's stateful datasets (a batch that is
// a std::optional: StatefulDataset, ChunkDataset) are not supported; the ctest compile_fail_stateful_dataset
// requires the static_assert's message, which names what to derive from instead.
#include <tensorgrad.h>

struct Stream : tg::data::datasets::BatchDataset<Stream, std::optional<tg::data::Example<>>> {
  std::optional<tg::data::Example<>> get_batch(std::vector<size_t>) override { return std::nullopt; }
  std::optional<size_t> size() const override { return std::nullopt; }
};

int main() {
  auto loader = tg::data::make_data_loader(Stream(), tg::data::samplers::SequentialSampler(0),
                                           tg::data::DataLoaderOptions());
  return 0;
}
