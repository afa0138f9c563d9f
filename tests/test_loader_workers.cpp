// tests/test_loader_workers.cpp: DistributedSampler (PyTorch's indices without shuffle, the
// properties of the shuffled shares) and DataLoader's num_workers (the one-worker order bit for bit,
// errors at their batch, early destruction). Test cases that start worker threads have "thread" in
// their names (tools/sanitize_check.sh runs them under TSan).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "testing.h"

using tg::Tensor;
using tg::data::DataLoader;
using tg::data::DistributedSampler;
using tg::data::LoaderOptions;

namespace {
std::vector<std::vector<int64_t>> shares(int64_t n, int64_t world, bool shuffle, uint64_t seed, bool drop_last,
                                         int64_t epoch = 0) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t r = 0; r < world; ++r) {
    DistributedSampler s(n, world, r, shuffle, seed, drop_last);
    s.set_epoch(epoch);
    out.push_back(s.indices());
    CHECK(static_cast<int64_t>(out.back().size()) == s.size());
  }
  return out;
}
using Shares = std::vector<std::vector<int64_t>>;
}  // namespace

TEST_CASE("DistributedSampler: without shuffle, PyTorch's indices for each rank") {
  // Recorded with /usr/bin/python3 (Debian's torch 1.13):
  //   from torch.utils.data.distributed import DistributedSampler
  //   [list(DistributedSampler(range(n), num_replicas=w, rank=r, shuffle=False, drop_last=dl)) for r in range(w)]
  CHECK(shares(10, 3, false, 0, false) == Shares{{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}});
  CHECK(shares(10, 3, false, 0, true) == Shares{{0, 3, 6}, {1, 4, 7}, {2, 5, 8}});
  CHECK(shares(5, 4, false, 0, false) == Shares{{0, 4}, {1, 0}, {2, 1}, {3, 2}});
  CHECK(shares(2, 4, false, 0, false) == Shares{{0}, {1}, {0}, {1}});
  CHECK(shares(2, 5, false, 0, false) == Shares{{0}, {1}, {0}, {1}, {0}});   // padding longer than the data
  CHECK(shares(3, 4, false, 0, true) == Shares{{}, {}, {}, {}});
  CHECK(shares(7, 2, false, 0, false) == Shares{{0, 2, 4, 6}, {1, 3, 5, 0}});
  CHECK(shares(12, 4, false, 0, false) == Shares{{0, 4, 8}, {1, 5, 9}, {2, 6, 10}, {3, 7, 11}});
  CHECK(DistributedSampler(0, 3, 1, false).indices().empty());
  // PyTorch: ValueError("Invalid rank 2, rank should be in the interval [0, 1]")
  CHECK_THROWS_WITH_AS(DistributedSampler(3, 2, 2), "DistributedSampler: Invalid rank 2, rank should be in the interval [0, 1]",
                       tg::Error);
  CHECK_THROWS_AS(DistributedSampler(3, 0, 0), tg::Error);
  CHECK_THROWS_AS(DistributedSampler(3, 2, -1), tg::Error);
  CHECK_THROWS_AS(DistributedSampler(3, 2, 0).set_epoch(-1), tg::Error);
}

TEST_CASE("DistributedSampler: shuffled shares partition the padded permutation, per epoch and seed") {
  for (int64_t n : {100, 103}) {
    for (int64_t world : {3, 4}) {
      CAPTURE(n);
      CAPTURE(world);
      const Shares e0 = shares(n, world, true, 7, false, 0);
      const int64_t per_rank = (n + world - 1) / world, padding = per_rank * world - n;
      // the union is every sample, once each, plus `padding` repeats
      std::vector<int64_t> all;
      for (const auto& s : e0) all.insert(all.end(), s.begin(), s.end());
      CHECK(static_cast<int64_t>(all.size()) == per_rank * world);
      std::set<int64_t> distinct(all.begin(), all.end());
      CHECK(static_cast<int64_t>(distinct.size()) == n);
      CHECK(*distinct.begin() == 0);
      CHECK(*distinct.rbegin() == n - 1);
      // ranks are disjoint except for the padding: at most `padding` samples appear twice
      int64_t repeated = static_cast<int64_t>(all.size()) - static_cast<int64_t>(distinct.size());
      CHECK(repeated == padding);
      // rank order interleaves one shared permutation: rank r's k-th index is position r + k*world
      CHECK(e0[0] != shares(n, world, false, 7, false, 0)[0]);   // it is shuffled
      // another epoch, another order; the same seed and epoch, the same order
      const Shares e1 = shares(n, world, true, 7, false, 1);
      CHECK(e1 != e0);
      CHECK(shares(n, world, true, 7, false, 1) == e1);
      CHECK(shares(n, world, true, 8, false, 0) != e0);   // another seed
      // drop_last: no padding, every rank floor(n / world) distinct indices
      const Shares dl = shares(n, world, true, 7, true, 0);
      std::set<int64_t> dl_all;
      for (const auto& s : dl) {
        CHECK(static_cast<int64_t>(s.size()) == n / world);
        dl_all.insert(s.begin(), s.end());
      }
      CHECK(static_cast<int64_t>(dl_all.size()) == n / world * world);
    }
  }
}

namespace {
/// 37 samples of shape (3) with value i * 3 + j, targets i; get_batch sleeps a little, more for
/// early samples, so that several workers finish out of order.
struct SlowDataset : tg::data::Dataset {
  Tensor data = tg::arange(37 * 3).to(tg::kFloat32).reshape({37, 3});
  int64_t fail_at = -1;   // get() of this index throws DataError
  mutable std::atomic<int> calls{0};
  int64_t size() const override { return 37; }
  tg::data::Example<> get(int64_t i) const override {
    ++calls;
    if (i == fail_at) throw tg::DataError("slow dataset: sample " + std::to_string(i) + " is broken");
    if (i % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
    return {Tensor(data.data().select(0, i).clone()), tg::full(tg::Shape{}, static_cast<double>(i), tg::kInt64)};
  }
};

std::vector<std::vector<float>> epoch_data(DataLoader& loader) {
  std::vector<std::vector<float>> out;
  for (auto& batch : loader) {
    std::vector<float> v = batch.data.to_vector<float>();
    for (int64_t t : batch.target.to_vector<int64_t>()) v.push_back(static_cast<float>(t));
    out.push_back(v);
  }
  return out;
}
}  // namespace

TEST_CASE("DataLoader: num_workers 0, 1, 2, 4 threads deliver the same batches in the same order") {
  SlowDataset ds;
  DataLoader one(ds, LoaderOptions().batch_size(5).shuffle(true).seed(3).num_workers(0));
  const auto want = epoch_data(one);
  REQUIRE(want.size() == 8);   // 37 = 7 x 5 + 2
  for (int64_t workers : {1, 2, 4}) {
    for (int64_t prefetch : {1, 2}) {
      CAPTURE(workers);
      CAPTURE(prefetch);
      DataLoader loader(ds, LoaderOptions().batch_size(5).shuffle(true).seed(3).num_workers(workers).prefetch(prefetch));
      CHECK(epoch_data(loader) == want);   // bitwise: the floats compared with ==
    }
  }
  // with a sampler, in the sampler's order
  DistributedSampler sampler(ds.size(), 2, 1, /*shuffle=*/true, /*seed=*/0);
  sampler.set_epoch(4);
  DataLoader sampled(ds, LoaderOptions().batch_size(4).sampler(sampler).num_workers(2));
  CHECK(sampled.size() == 5);   // 19 indices per rank
  std::vector<int64_t> targets;
  for (auto& batch : sampled)
    for (int64_t t : batch.target.to_vector<int64_t>()) targets.push_back(t);
  CHECK(targets == sampler.indices());
  CHECK_THROWS_WITH_AS(DataLoader(ds, LoaderOptions().sampler(sampler).shuffle(true)),
                       doctest::Contains("mutually exclusive with shuffle"), tg::Error);
  CHECK_THROWS_AS(DataLoader(ds, LoaderOptions().num_workers(-1)), tg::Error);
  CHECK_THROWS_AS(DataLoader(ds, LoaderOptions().num_workers(2).prefetch(0)), tg::Error);
}

TEST_CASE("DataLoader: a worker thread's exception reaches the consumer at its batch") {
  SlowDataset ds;
  ds.fail_at = 17;   // batch 3 of size 5 (samples 15-19), no shuffle
  for (int64_t workers : {1, 2, 4}) {
    CAPTURE(workers);
    DataLoader loader(ds, LoaderOptions().batch_size(5).num_workers(workers));
    int64_t delivered = 0;
    bool thrown = false;
    try {
      for (auto& batch : loader) {
        CHECK(batch.target.to_vector<int64_t>()[0] == delivered * 5);
        ++delivered;
      }
    } catch (const tg::DataError& e) {
      thrown = true;
      CHECK(std::string(e.what()) == "slow dataset: sample 17 is broken");
    }
    CHECK(thrown);
    CHECK(delivered == 3);
  }
}

TEST_CASE("DataLoader: destroying a loader or breaking mid-epoch joins its worker threads") {
  SlowDataset ds;
  for (int64_t workers : {2, 4}) {
    {   // break out of the loop: the epoch's last iterator goes, its workers are joined
      DataLoader loader(ds, LoaderOptions().batch_size(3).num_workers(workers));
      for (auto& batch : loader) {
        (void)batch;
        break;
      }
    }
    {   // the loader goes while an iterator is still held: the iterator then throws, nothing hangs
      DataLoader::Iterator it;
      {
        auto loader = std::make_unique<DataLoader>(ds, LoaderOptions().batch_size(3).num_workers(workers));
        it = loader->begin();
        (void)*it;
      }
      ++it;   // batch 0 was already taken; batch 1 needs the stopped workers
      CHECK_THROWS_AS(*it, tg::DataError);
    }
  }
  // the workers stopped at prefetch * workers batches ahead: a broken loop reads at most that much
  ds.calls = 0;
  {
    DataLoader loader(ds, LoaderOptions().batch_size(1).num_workers(2).prefetch(2));
    auto it = loader.begin();
    (void)*it;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(ds.calls.load() <= 1 + 2 * 2);
  }
}
