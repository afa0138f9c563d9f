// tests/test_distributed.cpp: tg::distributed over Gloo and DistributedDataParallel with several
// processes on the loopback interface. The test binary starts copies of itself (posix_spawn of
// /proc/self/exe, never fork of a threaded process) that run one "(child process)" case each, as
// ranks, with RANK/WORLD_SIZE and MASTER_ADDR/MASTER_PORT (env://, a port found free by binding port
// 0) or TG_DIST_INIT=file://<temp dir>; those cases do nothing outside such a run. Children check
// their own results (exit status) and write their parameters to files the parent compares.
#include "testing.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;
// The CUDA emulator's count of host waits (tests/cuda_emulator/runtime.cpp); null in other builds.
extern "C" unsigned long long tg_cuda_emulator_host_waits() __attribute__((weak));

namespace {

namespace fs = std::filesystem;
namespace dist = tg::distributed;
using Clock = std::chrono::steady_clock;

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}
bool in_child() { return env("TG_DIST_TEST_DIR") != nullptr; }
fs::path child_dir() { return env("TG_DIST_TEST_DIR"); }

/// The backend of a child: TG_DIST_BACKEND (gloo by default).
std::string child_backend() { return env("TG_DIST_BACKEND") ? env("TG_DIST_BACKEND") : "gloo"; }
/// Where a child's tensors live: the GPU for NCCL, else the CPU.
tg::Device child_device() { return child_backend() == "nccl" ? tg::Device::cuda() : tg::Device::cpu(); }

/// A child's init: TG_DIST_INIT (file://...) or env://, with TG_DIST_TIMEOUT_MS (3 s by default).
void child_init() {
  const char* t = env("TG_DIST_TIMEOUT_MS");
  dist::InitOptions o;
  o.timeout(std::chrono::milliseconds(t ? std::atoi(t) : 3000));
  if (const char* m = env("TG_DIST_INIT")) o.init_method(m);
  dist::init_process_group(child_backend(), o);
}

/// A free loopback port: bind port 0, read it back, close (a race with other jobs is unlikely).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

/// A fresh temporary folder, removed with the object.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tg_dist_XXXXXX").string();
    REQUIRE(::mkdtemp(&tmpl[0]) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

struct RankResult {
  int status = -1;   // waitpid status
  std::string out;   // its stdout and stderr
  bool exited_ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
  /// "exit status 1" or "killed by signal 13 (Broken pipe)", for messages.
  std::string how() const {
    if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status))
      return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
    return "wait status " + std::to_string(status);
  }
};

/// Starts `ranks` (a subset of 0..world-1) of this binary on the case `pattern`, waits up to
/// `limit` for all of them (killing the rest after it), and returns each one's status and output.
std::vector<RankResult> run_ranks(const std::string& pattern, int world, const std::vector<int>& ranks, bool use_file,
                                  const TempDir& dir, const std::vector<std::string>& extra_env = {},
                                  std::chrono::milliseconds limit = std::chrono::milliseconds(20000)) {
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const int port = use_file ? 0 : free_port();
  std::vector<pid_t> pids;
  for (int rank : ranks) {
    std::vector<std::string> envs;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string s = *e;
      if (s.rfind("RANK=", 0) == 0 || s.rfind("WORLD_SIZE=", 0) == 0 || s.rfind("MASTER_", 0) == 0 ||
          s.rfind("TG_DIST_", 0) == 0)
        continue;
      envs.push_back(s);
    }
    envs.push_back("RANK=" + std::to_string(rank));
    envs.push_back("WORLD_SIZE=" + std::to_string(world));
    envs.push_back("TG_DIST_TEST_DIR=" + dir.path.string());
    envs.push_back("TG_NUM_THREADS=1");
    envs.push_back("OPENBLAS_NUM_THREADS=1");
    // several NCCL ranks on one GPU: a host id of its own per rank (Note [Several ranks on one GPU])
    envs.push_back("NCCL_HOSTID=tensorgrad-test-rank-" + std::to_string(rank));
    if (use_file) {
      envs.push_back("TG_DIST_INIT=file://" + (dir.path / "rdv").string());
    } else {
      envs.push_back("MASTER_ADDR=127.0.0.1");
      envs.push_back("MASTER_PORT=" + std::to_string(port));
    }
    envs.insert(envs.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> envp;
    for (auto& s : envs) envp.push_back(&s[0]);
    envp.push_back(nullptr);
    std::string a0 = self, a1 = "--test-case=" + pattern, a2 = "--no-intro", a3 = "--no-version";
    char* argv[] = {&a0[0], &a1[0], &a2[0], &a3[0], nullptr};
    const std::string log = (dir.path / ("rank" + std::to_string(rank) + ".log")).string();
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, self.c_str(), &fa, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&fa);
    REQUIRE(rc == 0);
    pids.push_back(pid);
  }
  std::vector<RankResult> results(ranks.size());
  std::vector<bool> done(ranks.size(), false);
  const auto deadline = Clock::now() + limit;
  for (std::size_t left = ranks.size(); left > 0;) {
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      if (done[i]) continue;
      if (::waitpid(pids[i], &results[i].status, WNOHANG) == pids[i]) {
        done[i] = true;
        --left;
      }
    }
    if (left == 0) break;
    if (Clock::now() > deadline) {   // a hang is a failure, never a hanging suite
      for (std::size_t i = 0; i < ranks.size(); ++i)
        if (!done[i]) {
          ::kill(pids[i], SIGKILL);
          ::waitpid(pids[i], &results[i].status, 0);
          results[i].out = "[killed by the test after " + std::to_string(limit.count()) + " ms]\n";
        }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    std::ifstream f(dir.path / ("rank" + std::to_string(ranks[i]) + ".log"));
    std::stringstream ss;
    ss << f.rdbuf();
    results[i].out += ss.str();
  }
  return results;
}

std::vector<int> all_ranks(int world) {
  std::vector<int> r;
  for (int i = 0; i < world; ++i) r.push_back(i);
  return r;
}

void require_all_ok(const std::vector<RankResult>& results) {
  for (std::size_t i = 0; i < results.size(); ++i)
    CHECK_MESSAGE(results[i].exited_ok(), "rank ", i, " (", results[i].how(), "):\n", results[i].out);
}

#define SKIP_UNLESS_GLOO()                                                    \
  do {                                                                        \
    if (!dist::is_backend_available("gloo")) {                                \
      MESSAGE("built without Gloo (TENSORGRAD_DISTRIBUTED): nothing to run"); \
      return;                                                                 \
    }                                                                         \
  } while (0)

// ---- the model both DDP and the single-process reference train

struct Net : tg::nn::Module {
  tg::nn::Linear fc1{8, 16}, fc2{16, 4};
  Net() { register_module("fc1", fc1); register_module("fc2", fc2); }
  tg::Tensor forward(const tg::Tensor& x) override { return fc2(tg::relu(fc1(x))); }
};

constexpr int kSteps = 20;
constexpr int kBatch = 6;   // per rank

/// Step s's global batch of world * kBatch rows, the same in every process.
std::pair<tg::Tensor, tg::Tensor> global_batch(int step, int world) {
  tg::manual_seed(1000 + step);
  return {tg::randn({world * kBatch, 8}), tg::randn({world * kBatch, 4})};
}

std::vector<float> flat_params(tg::nn::Module& m) {
  std::vector<float> out;
  for (auto& p : m.parameters()) {
    auto v = p.to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

/// Trains net for kSteps of SGD with momentum. With DDP each rank takes its rows of the global batch;
/// with accumulate, each step is two half-batches, the first under no_sync().
void train(tg::nn::Module& net, tg::nn::parallel::DistributedDataParallel* ddp, int rank, int world, bool accumulate) {
  tg::nn::Module& model = ddp ? static_cast<tg::nn::Module&>(*ddp) : net;
  tg::optim::SGD opt(model.parameters(), tg::optim::SGDOptions(0.05).momentum(0.9));
  tg::nn::MSELoss mse;
  for (int s = 0; s < kSteps; ++s) {
    auto [x, y] = global_batch(s, world);
    if (ddp) {
      x = tg::Tensor(x.data().narrow(0, rank * kBatch, kBatch).contiguous(), false);
      y = tg::Tensor(y.data().narrow(0, rank * kBatch, kBatch).contiguous(), false);
    }
    const tg::Device dev = net.parameters().front().device();
    x = x.to(dev);
    y = y.to(dev);
    opt.zero_grad();
    if (!accumulate) {
      mse(model(x), y).backward();
    } else {
      const int64_t h = x.size(0) / 2;
      tg::Tensor x0(x.data().narrow(0, 0, h).contiguous()), x1(x.data().narrow(0, h, h).contiguous());
      tg::Tensor y0(y.data().narrow(0, 0, h).contiguous()), y1(y.data().narrow(0, h, h).contiguous());
      if (ddp) {
        auto guard = ddp->no_sync();
        (mse(model(x0), y0) * 0.5).backward();
      } else {
        (mse(model(x0), y0) * 0.5).backward();
      }
      (mse(model(x1), y1) * 0.5).backward();
    }
    opt.step();
  }
}

void write_floats(const fs::path& p, const std::vector<float>& v) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
}
std::vector<float> read_floats(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<float> v(bytes.size() / sizeof(float));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

}  // namespace

// ---- children (ranks): each returns at once outside a run_ranks run

TEST_CASE("distributed: (child process) collectives") {
  if (!in_child()) return;
  child_init();
  const int rank = dist::get_rank(), world = dist::get_world_size();
  const tg::Device dev = child_device();
  CHECK(dist::is_initialized());
  CHECK(dist::get_backend() == child_backend());
  // sum, avg, max, min of float32 values that differ per rank: (rank + 1) * (i + 1)
  auto make = [&] {
    std::vector<float> v(33);
    for (int i = 0; i < 33; ++i) v[i] = static_cast<float>((rank + 1) * (i + 1));
    return tg::from_vector(v, {3, 11}).to(dev);
  };
  const double tri = world * (world + 1) / 2.0;
  tg::Tensor s = make();
  dist::all_reduce(s);
  auto sv = s.to_vector<float>();
  for (int i = 0; i < 33; ++i) CHECK(sv[i] == static_cast<float>(tri * (i + 1)));
  tg::Tensor a = make();
  dist::all_reduce(a, dist::ReduceOp::AVG);
  CHECK(a.to_vector<float>()[4] == doctest::Approx(tri / world * 5));
  tg::Tensor mx = make(), mn = make();
  dist::all_reduce(mx, dist::ReduceOp::MAX);
  dist::all_reduce(mn, dist::ReduceOp::MIN);
  CHECK(mx.to_vector<float>()[2] == static_cast<float>(world * 3));
  CHECK(mn.to_vector<float>()[2] == 3.0f);
  // int64 sum, exact beyond float precision
  tg::Tensor n = tg::full({5}, static_cast<double>((int64_t(1) << 40) + rank), tg::kInt64).to(dev);
  dist::all_reduce(n);
  CHECK(n.to_vector<int64_t>()[3] == world * (int64_t(1) << 40) + static_cast<int64_t>(tri) - world);
  // float64, bfloat16 and float16 reductions of exactly representable values
  tg::Tensor d = tg::full({9}, 0.25 * (rank + 1), tg::kFloat64).to(dev);
  dist::all_reduce(d);
  CHECK(d.to_vector<double>()[8] == 0.25 * tri);
  tg::Tensor h = tg::full({9}, static_cast<double>(rank + 1), tg::kBFloat16).to(dev);
  dist::all_reduce(h, dist::ReduceOp::MAX);
  CHECK(h.to(tg::kFloat32).to_vector<float>()[0] == static_cast<float>(world));
  tg::Tensor f16 = tg::full({9}, 0.5 * (rank + 1), tg::kFloat16).to(dev);
  dist::all_reduce(f16);
  CHECK(f16.to(tg::kFloat32).to_vector<float>()[5] == static_cast<float>(0.5 * tri));
  // a non-contiguous view: reduced through a staging copy, written back in place
  tg::Tensor base = tg::full({4, 6}, static_cast<double>(rank + 1)).to(dev);
  tg::Tensor view(base.data().transpose(0, 1), false);
  dist::all_reduce(view);
  CHECK(base.to_vector<float>()[7] == static_cast<float>(tri));
  // started without waiting (async_op=True), finished by wait()
  tg::Tensor q = make();
  std::unique_ptr<dist::Work> work = dist::all_reduce(q, dist::ReduceOp::SUM, true);
  REQUIRE(work != nullptr);
  work->wait();
  CHECK(q.to_vector<float>()[10] == static_cast<float>(tri * 11));
  CHECK(dist::all_reduce(q, dist::ReduceOp::MIN, false) == nullptr);
  // broadcast from the last rank
  tg::Tensor b = tg::full({7}, static_cast<double>(rank * 10)).to(dev);
  dist::broadcast(b, world - 1);
  CHECK(b.to_vector<float>()[6] == static_cast<float>((world - 1) * 10));
  // all_gather
  std::vector<tg::Tensor> parts;
  dist::all_gather(parts, tg::full({2, 2}, static_cast<double>(rank)).to(dev));
  REQUIRE(parts.size() == static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) CHECK(parts[r].to_vector<float>()[3] == static_cast<float>(r));
  dist::barrier();
  dist::destroy_process_group();
  CHECK(!dist::is_initialized());
}

TEST_CASE("distributed: (child process) DDP training with a communication thread") {
  if (!in_child()) return;
  child_init();
  const int rank = dist::get_rank(), world = dist::get_world_size();
  for (bool accumulate : {false, true}) {
    tg::manual_seed(7 + rank);   // different on every rank: the construction broadcast must fix it
    Net net;
    net.to(child_device());
    // a small cap: several buckets, launched in order while backward runs
    tg::nn::parallel::DistributedDataParallel ddp(net, tg::nn::parallel::DistributedDataParallelOptions().bucket_cap_mb(0.0004));
    CHECK(ddp.bucket_indices().size() > 1);
    CHECK(ddp.bucket_indices().front().front() == 3);   // reverse registration order: fc2.bias first
    train(net, &ddp, rank, world, accumulate);
    write_floats(child_dir() / ((accumulate ? "acc" : "sync") + std::to_string(rank) + ".bin"), flat_params(net));
    CHECK(ddp.last_stats().buckets == static_cast<int>(ddp.bucket_indices().size()));
    CHECK(ddp.last_stats().bytes == static_cast<int64_t>((8 * 16 + 16 + 16 * 4 + 4) * sizeof(float)));
    // With TG_CUDA_ALLOCATOR=passthrough (the emulator's ASan stage) every free is a cudaFree, which
    // waits for the device: the count is about the caching allocator's steady state.
    const bool passthrough = env("TG_CUDA_ALLOCATOR") && std::string(env("TG_CUDA_ALLOCATOR")) == "passthrough";
    if (!accumulate && child_backend() == "nccl" && tg_cuda_emulator_host_waits != nullptr && !passthrough) {
      // Note [Queued collectives]: the buckets' all-reduces are queued back to back and one wait (and
      // one copy of their headers) covers them all, however many buckets there are
      tg::nn::parallel::DistributedDataParallel each(net, tg::nn::parallel::DistributedDataParallelOptions().bucket_cap_mb(1e-6));
      CHECK(each.bucket_indices().size() == 4);   // a bucket per parameter
      const tg::Tensor x = tg::randn({kBatch, 8}).to(child_device()), y = tg::randn({kBatch, 4}).to(child_device());
      tg::nn::MSELoss()(each(x), y).backward();   // the first one sizes the buffer the headers are read into
      const unsigned long long before = tg_cuda_emulator_host_waits();
      tg::nn::MSELoss()(each(x), y).backward();
      const unsigned long long waits = tg_cuda_emulator_host_waits() - before;
      std::printf("host waits in one DDP backward with %zu buckets: %llu\n", each.bucket_indices().size(), waits);
      CHECK(waits == 1);
    }
  }
  dist::destroy_process_group();
}

TEST_CASE("distributed: (child process) a rank withholds a collective") {
  if (!in_child()) return;
  child_init();
  const int rank = dist::get_rank();
  tg::Tensor t = tg::ones({100}).to(child_device());
  dist::all_reduce(t);   // everyone is connected
  const fs::path done = child_dir() / "rank0.done";
  if (rank == 1) {   // stays alive but never calls the second all_reduce, until rank 0 has given up
    const auto until = Clock::now() + std::chrono::seconds(15);
    while (!fs::exists(done) && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(fs::exists(done));
  } else {
    const auto t0 = Clock::now();
    std::string what;
    try {
      dist::all_reduce(t);
    } catch (const tg::DistributedError& e) {
      what = e.what();
    }
    const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
    std::ofstream(done).put('1');
    std::printf("rank 0 caught after %.3f s: %s\n", waited, what.c_str());
    CHECK_MESSAGE(what.find("all_reduce #2: rank 1 did not reach this collective within 1000 ms") != std::string::npos,
                  what);
    CHECK(waited < 8.0);   // the timeout, the emulator's patience and the diagnosis's grace: never a hang
    TG_CHECK_THROWS(dist::barrier(), tg::DistributedError, "barrier: the process group failed earlier");
  }
  dist::destroy_process_group();
}

TEST_CASE("distributed: (child process) a rank dies") {
  if (!in_child()) return;
  child_init();
  const int rank = dist::get_rank(), world = dist::get_world_size();
  const int victim = std::atoi(env("TG_DIST_VICTIM"));
  tg::Tensor t = tg::ones({1000});
  dist::all_reduce(t);   // everyone is connected
  // the victim dies after one collective (or one DDP step); the others go on into the next ones
  if (rank == victim && !env("TG_DIST_DDP")) ::raise(SIGKILL);
  auto t0 = Clock::now();
  std::string what;
  try {
    if (env("TG_DIST_DDP")) {
      Net net;
      tg::nn::parallel::DistributedDataParallel ddp(net);
      for (int s = 0; s < 3; ++s) {
        if (s == 1 && rank == victim) ::raise(SIGKILL);
        t0 = Clock::now();
        tg::nn::MSELoss()(ddp(tg::randn({4, 8})), tg::randn({4, 4})).backward();
      }
    } else {
      for (int s = 0; s < 3; ++s) dist::all_reduce(t);
    }
  } catch (const tg::DistributedError& e) {
    what = e.what();
  }
  const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("rank %d of %d caught after %.3f s: %s\n", rank, world, waited, what.c_str());
  CHECK_MESSAGE(what.find("rank " + std::to_string(victim) + " has exited") != std::string::npos, what);
  CHECK(waited < 3.0);   // within the timeout
  // the group is unusable afterwards, and says why
  try {
    dist::all_reduce(t);
    CHECK_MESSAGE(false, "a broken group must refuse collectives");
  } catch (const tg::DistributedError& e) {
    CHECK(std::string(e.what()).find("failed earlier") != std::string::npos);
  }
  dist::destroy_process_group();
}

TEST_CASE("distributed: (child process) a rank never joins") {
  if (!in_child()) return;
  std::string what;
  const auto t0 = Clock::now();
  try {
    child_init();
  } catch (const tg::DistributedError& e) {
    what = e.what();
  }
  const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  CHECK_MESSAGE(what.find("rank 2 did not join within 500 ms") != std::string::npos, what);
  CHECK(waited < 2.0);
  CHECK(!dist::is_initialized());
}

TEST_CASE("distributed: (child process) mismatched tensors") {
  if (!in_child()) return;
  child_init();
  const int rank = dist::get_rank();
  const tg::Device dev = child_device();
  tg::Tensor t = (rank == 0 ? tg::ones({3, 4}) : tg::ones({4, 3})).to(dev);
  std::string what;
  try {
    dist::all_reduce(t);
  } catch (const tg::DistributedError& e) {
    what = e.what();
  }
  CHECK_MESSAGE(what.find("rank 0 called all_reduce of float32 [3, 4] with SUM; rank 1 called all_reduce of float32 [4, 3]") !=
                    std::string::npos, what);
  what.clear();
  tg::Tensor u = (rank == 0 ? tg::ones({5}) : tg::ones({5}, tg::kFloat64)).to(dev);
  try {
    dist::broadcast(u, 0);
  } catch (const tg::DistributedError& e) {
    what = e.what();
  }
  CHECK_MESSAGE(what.find("rank 1 called broadcast of float64 [5] from root 0") != std::string::npos, what);
  // nothing moved: the group still works
  tg::Tensor ok = tg::ones({2}).to(dev);
  dist::all_reduce(ok);
  CHECK(ok.to_vector<float>()[1] == 2.0f);
  // started without waiting: the mismatch is named by wait() (NCCL, Note [Queued collectives]) or at
  // once (Gloo)
  what.clear();
  tg::Tensor v = (rank == 0 ? tg::ones({2, 6}) : tg::ones({6, 2})).to(dev);
  try {
    dist::all_reduce(v, dist::ReduceOp::SUM, true)->wait();
  } catch (const tg::DistributedError& e) {
    what = e.what();
  }
  CHECK_MESSAGE(what.find("rank 0 called all_reduce of float32 [2, 6] with SUM; rank 1 called all_reduce of float32 [6, 2]") !=
                    std::string::npos, what);
  dist::destroy_process_group();
}

// ---- the tests

TEST_CASE("distributed: collectives on 2 processes (env://) and 4 processes (file://)") {
  SKIP_UNLESS_GLOO();
  {
    TempDir dir;
    require_all_ok(run_ranks("distributed: (child process) collectives", 2, all_ranks(2), false, dir));
  }
  {
    TempDir dir;
    require_all_ok(run_ranks("distributed: (child process) collectives", 4, all_ranks(4), true, dir));
  }
}

// The longest case here (about 1.5 s on a loaded 2-core machine): 6 processes, each 50 backwards with
// 2 buckets; a collective costs a few hundred microseconds of loopback latency when 4 ranks share 2 cores.
TEST_CASE("distributed: DDP with 2 and 4 processes matches one process on the whole batch (communication thread)") {
  SKIP_UNLESS_GLOO();
  for (int world : {2, 4}) {
    CAPTURE(world);
    TempDir dir;
    require_all_ok(run_ranks("distributed: (child process) DDP training*", world, all_ranks(world), world == 4, dir));
    for (bool accumulate : {false, true}) {
      CAPTURE(accumulate);
      // the reference: rank 0's initial parameters, one process, the concatenated batches
      tg::manual_seed(7);
      Net net;
      train(net, nullptr, 0, world, accumulate);
      const std::vector<float> want = flat_params(net);
      const std::string tag = accumulate ? "acc" : "sync";
      const std::vector<float> r0 = read_floats(dir.path / (tag + "0.bin"));
      REQUIRE(r0.size() == want.size());
      for (int r = 1; r < world; ++r) {
        const std::vector<float> rr = read_floats(dir.path / (tag + std::to_string(r) + ".bin"));
        CHECK_MESSAGE(rr == r0, "rank ", r, " differs from rank 0 (must be bitwise identical)");
      }
      // equal up to float32 rounding of the sum order: 20 steps of sums over 6..24 rows
      testing::check_close(tg::from_vector(r0, {static_cast<int64_t>(r0.size())}),
                           tg::from_vector(want, {static_cast<int64_t>(want.size())}), 1e-4, 1e-5);
    }
  }
}

TEST_CASE("distributed: a killed rank makes the others fail with its rank named, within the timeout") {
  SKIP_UNLESS_GLOO();
  struct Case {
    int world, victim;
    bool file, ddp;
  };
  for (const Case& c : {Case{3, 2, false, false}, Case{2, 0, false, true}, Case{2, 1, true, true}}) {
    CAPTURE(c.world);
    CAPTURE(c.victim);
    CAPTURE(c.ddp);
    TempDir dir;
    std::vector<std::string> extra{"TG_DIST_VICTIM=" + std::to_string(c.victim)};
    if (c.ddp) extra.push_back("TG_DIST_DDP=1");
    const auto res = run_ranks("distributed: (child process) a rank dies", c.world, all_ranks(c.world), c.file, dir, extra);
    for (int r = 0; r < c.world; ++r) {
      if (r == c.victim) {
        CHECK_MESSAGE((WIFSIGNALED(res[r].status) && WTERMSIG(res[r].status) == SIGKILL), res[r].how(), "\n", res[r].out);
      } else {
        CHECK_MESSAGE(res[r].exited_ok(), "rank ", r, " (", res[r].how(), "):\n", res[r].out);
      }
    }
  }
}

TEST_CASE("distributed: SIGPIPE is ignored while a Gloo group exists, and restored after (Note [SIGPIPE])") {
  SKIP_UNLESS_GLOO();
  // Gloo writes with writev(): without this, a write to a dead rank would kill the survivor by SIGPIPE
  // before the DistributedError naming the dead rank could be raised.
  const auto disposition = [] {
    struct sigaction now {};
    sigaction(SIGPIPE, nullptr, &now);
    return std::string(now.sa_handler == SIG_DFL ? "default" : now.sa_handler == SIG_IGN ? "ignored" : "a handler");
  };
  const auto inherited = signal(SIGPIPE, SIG_DFL);   // whatever ctest's parent left us
  TempDir dir;
  dist::init_process_group("gloo", dist::InitOptions().rank(0).world_size(1).init_method("file://" + dir.path.string()));
  CHECK(disposition() == "ignored");
  dist::destroy_process_group();
  CHECK(disposition() == "default");
  // A program's own choice is left alone.
  signal(SIGPIPE, SIG_IGN);
  dist::init_process_group("gloo", dist::InitOptions().rank(0).world_size(1).init_method("file://" + dir.path.string()));
  dist::destroy_process_group();
  CHECK(disposition() == "ignored");
  signal(SIGPIPE, inherited);
}

TEST_CASE("distributed: a rank that never joins is named when the others' init times out") {
  SKIP_UNLESS_GLOO();
  TempDir dir;   // world size 3, only ranks 0 and 1 start; a 0.5 s timeout
  require_all_ok(run_ranks("distributed: (child process) a rank never joins", 3, {0, 1}, false, dir,
                           {"TG_DIST_TIMEOUT_MS=500"}));
}

TEST_CASE("distributed: tensors that differ across ranks raise on every rank, before any data moves") {
  SKIP_UNLESS_GLOO();
  TempDir dir;
  require_all_ok(run_ranks("distributed: (child process) mismatched tensors", 2, all_ranks(2), true, dir));
}

TEST_CASE("distributed: init_process_group's errors") {
  if (!dist::is_backend_available("gloo")) {
    // refused before the rendezvous is read, naming what to install; a build with neither backend says so
    TG_CHECK_THROWS(dist::init_process_group("gloo", dist::InitOptions().rank(0).world_size(1)), tg::DistributedError,
                    "built without Gloo, so backend 'gloo' is unavailable");
    // is_available() then says whether NCCL is built in, which its refusal names when it is not
    bool nccl_built = true;
    try {
      dist::init_process_group("nccl", dist::InitOptions().rank(0).world_size(1).init_method("bogus://"));
    } catch (const tg::DistributedError& e) {
      nccl_built = std::string(e.what()).find("a tensorgrad built without") == std::string::npos;
    }
    CHECK(dist::is_available() == nccl_built);
    CHECK(!dist::is_initialized());
    return;
  }
  TG_CHECK_THROWS(dist::get_rank(), tg::DistributedError, "Default process group has not been initialized");
  TG_CHECK_THROWS(dist::init_process_group("mpi", dist::InitOptions().rank(0).world_size(1)), tg::DistributedError,
                  "unknown backend 'mpi'");
  TG_CHECK_THROWS(dist::init_process_group("gloo", dist::InitOptions().rank(2).world_size(2)), tg::DistributedError,
                  "rank 2 is out of range for world_size 2");
  TG_CHECK_THROWS(dist::init_process_group("gloo", dist::InitOptions().rank(0).world_size(1).init_method("http://x")),
                  tg::DistributedError, "unknown init_method 'http://x'");
  CHECK(dist::is_available());
  CHECK(!dist::is_backend_available("mpi"));
  if (!tg::cuda::is_available()) {
    // what is missing is named: the GPU (and the library, when it is missing too)
    CHECK(!dist::is_backend_available("nccl"));
    TG_CHECK_THROWS(dist::init_process_group("nccl", dist::InitOptions().rank(0).world_size(1)), tg::DistributedError,
                    "backend 'nccl' needs a CUDA GPU and NCCL, and here there is ");
    try {
      dist::init_process_group("nccl", dist::InitOptions().rank(0).world_size(1));
    } catch (const tg::DistributedError& e) {
      const std::string what = e.what();
      CHECK_MESSAGE((what.find("no usable CUDA GPU (") != std::string::npos ||
                     what.find("built without CUDA") != std::string::npos), what);
    }
  }
  CHECK(!dist::is_initialized());
}

TEST_CASE("distributed: (child process) nccl without its library") {
  if (std::getenv("TG_NCCL_LIBRARY") == nullptr) return;
  TempDir dir;
  try {
    dist::init_process_group("nccl", dist::InitOptions().rank(0).world_size(1).init_method("file://" + dir.path.string()));
    std::printf("init_process_group(nccl) succeeded\n");
    dist::destroy_process_group();
  } catch (const tg::DistributedError& e) {
    std::printf("DistributedError: %s\n", e.what());
  }
}

TEST_CASE("distributed: a missing libnccl.so.2 is named with the loader's error") {
  const std::string info = tg::cuda::info();
  const std::string out = testing::run_self("", "TG_NCCL_LIBRARY=/nonexistent/libnccl.so.2",
                                            "distributed: (child process) nccl without its library");
  if (info.find("emulator") != std::string::npos) {   // the emulator's NCCL is linked in: nothing to open
    CHECK_MESSAGE(out.find("init_process_group(nccl) succeeded") != std::string::npos, out);
    return;
  }
  REQUIRE_MESSAGE(out.find("DistributedError: init_process_group: backend 'nccl' needs a CUDA GPU and NCCL") !=
                      std::string::npos, out);
  if (out.find("built without") != std::string::npos) {
    MESSAGE("tensorgrad was built without CUDA or nccl.h: no library to look for");
    return;
  }
  CHECK_MESSAGE(out.find("no /nonexistent/libnccl.so.2 (TG_NCCL_LIBRARY) could be loaded (/nonexistent/libnccl.so.2: "
                         "cannot open shared object file") != std::string::npos, out);
  CHECK_MESSAGE((out.find("no usable CUDA GPU") != std::string::npos) == !tg::cuda::is_available(), out);
}

TEST_CASE("distributed: DDP names the parameters that got no gradient, or reduces them with find_unused_parameters") {
  SKIP_UNLESS_GLOO();
  TempDir dir;
  dist::init_process_group("gloo", dist::InitOptions().rank(0).world_size(1).init_method("file://" + dir.path.string())
                                       .timeout(std::chrono::seconds(3)));
  struct Branchy : tg::nn::Module {
    tg::nn::Linear used{3, 2}, unused{3, 2};
    Branchy() { register_module("used", used); register_module("unused", unused); }
    tg::Tensor forward(const tg::Tensor& x) override { return used(x); }
  };
  {
    Branchy m;
    tg::nn::parallel::DistributedDataParallel ddp(m);
    ddp(tg::randn({4, 3})).sum().backward();
    TG_CHECK_THROWS(ddp(tg::randn({4, 3})), tg::DistributedError,
                    "did not receive a gradient: module.unused.weight, module.unused.bias");
    { tg::NoGradGuard no_grad; ddp(tg::randn({4, 3})); }   // forwards without backward are fine
    ddp(tg::randn({4, 3}));
  }
  {
    Branchy m;
    tg::nn::parallel::DistributedDataParallel ddp(m, tg::nn::parallel::DistributedDataParallelOptions().find_unused_parameters(true));
    for (int s = 0; s < 2; ++s) {
      ddp.zero_grad();
      auto x = tg::randn({4, 3});
      ddp(x).sum().backward();
      CHECK(ddp.last_stats().buckets == 1);
      CHECK(m.unused.weight.grad().defined());
      CHECK(m.unused.weight.grad().abs().sum().item() == 0.0);
      CHECK(m.used.bias.grad().to_vector<float>()[0] == 4.0f);   // world size 1: the local gradient
    }
  }
  dist::destroy_process_group();
  CHECK(!dist::is_initialized());
}

// ---- NCCL on one GPU (world size 1): skipped without a GPU, failing instead under TG_REQUIRE_CUDA=1;
// on the CUDA emulator they run against its world-size-1 NCCL (tests/cuda_emulator/nccl.cpp).

namespace {

/// Joins an NCCL group of one rank through a file:// folder. A GPU without NCCL (no libnccl.so.2)
/// skips visibly, or fails under TG_REQUIRE_CUDA=1 (the GPU check must run these cases): false then.
bool init_nccl_alone(const TempDir& dir) {
  const auto options = dist::InitOptions().rank(0).world_size(1).init_method("file://" + dir.path.string())
                           .timeout(std::chrono::seconds(20));
  if (!dist::is_backend_available("nccl")) {
    std::string why;
    try {
      dist::init_process_group("nccl", options);
    } catch (const tg::DistributedError& e) {
      why = e.what();
    }
    if (testing::require_cuda()) FAIL("TG_REQUIRE_CUDA=1 but backend 'nccl' is not usable: " << why);
    MESSAGE("NCCL is not usable here: skipped (" << why << ")");
    return false;
  }
  dist::init_process_group("nccl", options);
  return true;
}

}  // namespace

TEST_CASE("cuda: nccl all_reduce, broadcast, all_gather and barrier on world size 1") {
  TG_NEED_CUDA();
  TempDir dir;
  if (!init_nccl_alone(dir)) return;
  CHECK(dist::get_backend() == "nccl");
  CHECK(dist::get_world_size() == 1);
  const tg::Device gpu = tg::Device::cuda();
  tg::manual_seed(21);
  const tg::Tensor x = tg::randn({3, 257});
  const std::vector<float> xv = x.to_vector<float>();
  // one rank: every reduction returns the values (AVG divides by 1), in place on the device
  for (dist::ReduceOp op : {dist::ReduceOp::SUM, dist::ReduceOp::AVG, dist::ReduceOp::PRODUCT, dist::ReduceOp::MIN,
                            dist::ReduceOp::MAX}) {
    tg::Tensor t = x.to(gpu);
    dist::all_reduce(t, op);
    CHECK(t.device().is_cuda());
    CHECK(t.to_vector<float>() == xv);
  }
  // float64, int64 beyond float precision, bool, float16
  tg::Tensor d = tg::full({33}, 1.0 / 3.0, tg::kFloat64).to(gpu);
  dist::all_reduce(d);
  CHECK(d.to_vector<double>()[32] == 1.0 / 3.0);
  tg::Tensor n = tg::full({5}, static_cast<double>((int64_t(1) << 40) + 3), tg::kInt64).to(gpu);
  dist::all_reduce(n, dist::ReduceOp::MAX);
  CHECK(n.to_vector<int64_t>()[4] == (int64_t(1) << 40) + 3);
  const tg::RawTensor mask = tg::gt(x, tg::zeros_like(x)).data();
  tg::Tensor b(mask.to(gpu), false);
  dist::all_reduce(b);   // a bool sum is "any"
  CHECK(tg::Tensor(b.data().to(tg::kFloat32), false).to_vector<float>() ==
        tg::Tensor(mask.to(tg::kFloat32), false).to_vector<float>());
  tg::Tensor h = x.to(tg::kFloat16).to(gpu);
  dist::all_reduce(h, dist::ReduceOp::AVG);
  CHECK(h.to(tg::kFloat32).to_vector<float>() == x.to(tg::kFloat16).to(tg::kFloat32).to_vector<float>());
  // a non-contiguous view: reduced through a contiguous copy, written back in place
  tg::Tensor base = x.to(gpu);
  tg::Tensor view(base.data().transpose(0, 1), false);
  dist::all_reduce(view);
  CHECK(base.to_vector<float>() == xv);
  // broadcast from rank 0; a root out of range
  tg::Tensor c = x.to(gpu);
  dist::broadcast(c, 0);
  CHECK(c.to_vector<float>() == xv);
  TG_CHECK_THROWS(dist::broadcast(c, 1), tg::DistributedError, "broadcast: root 1 is out of range for world size 1");
  // all_gather: one part, a fresh device tensor of t's shape
  std::vector<tg::Tensor> parts;
  dist::all_gather(parts, x.to(gpu));
  REQUIRE(parts.size() == 1);
  CHECK(parts[0].device().is_cuda());
  CHECK(parts[0].sizes() == x.sizes());
  CHECK(parts[0].to_vector<float>() == xv);
  dist::barrier();
  // zero elements: nothing moves, nothing fails
  tg::Tensor empty = tg::zeros({0, 4}).to(gpu);
  dist::all_reduce(empty);
  // CPU tensors belong to the Gloo backend
  tg::Tensor cpu = x.detach();
  TG_CHECK_THROWS(dist::all_reduce(cpu), tg::DistributedError, "all_reduce: backend 'nccl' needs CUDA tensors");
  TG_CHECK_THROWS(dist::all_reduce(tg::Tensor(tg::full({2}, 1.0, tg::kInt64).data().to(gpu), false), dist::ReduceOp::AVG),
                  tg::DistributedError, "ReduceOp::AVG needs a floating dtype, got int64");
  dist::destroy_process_group();
  CHECK(!dist::is_initialized());
  // a second group in the same process (its own keys in the store's folder)
  TempDir again;
  REQUIRE(init_nccl_alone(again));
  tg::Tensor e = x.to(gpu);
  dist::all_reduce(e);
  CHECK(e.to_vector<float>() == xv);
  dist::destroy_process_group();
}

TEST_CASE("cuda: nccl DDP steps equal the single-process steps") {
  TG_NEED_CUDA();
  TempDir dir;
  if (!init_nccl_alone(dir)) return;
  const tg::Device gpu = tg::Device::cuda();
  tg::manual_seed(7);
  Net ref;
  tg::manual_seed(7);
  Net net;
  ref.to(gpu);
  net.to(gpu);
  {
    // a small cap: several buckets on the device, launched from the hooks while backward runs
    tg::nn::parallel::DistributedDataParallel ddp(net, tg::nn::parallel::DistributedDataParallelOptions().bucket_cap_mb(0.0004));
    CHECK(ddp.bucket_indices().size() > 1);
    tg::optim::SGD opt_ref(ref.parameters(), tg::optim::SGDOptions(0.05).momentum(0.9));
    tg::optim::SGD opt(ddp.parameters(), tg::optim::SGDOptions(0.05).momentum(0.9));
    tg::nn::MSELoss mse;
    for (int s = 0; s < 3; ++s) {
      auto [x, y] = global_batch(s, 1);
      x = x.to(gpu);
      y = y.to(gpu);
      opt_ref.zero_grad();
      mse(ref(x), y).backward();
      opt_ref.step();
      opt.zero_grad();
      mse(ddp(x), y).backward();
      opt.step();
    }
    CHECK(ddp.last_stats().buckets == static_cast<int>(ddp.bucket_indices().size()));
  }
  // one rank: the bucket's all-reduce copies and the average multiplies by 1, so bit for bit
  CHECK(flat_params(net) == flat_params(ref));
  dist::destroy_process_group();
}

TEST_CASE("cuda: nccl a collective that never completes fails within the timeout and breaks the group") {
  TG_NEED_CUDA();
  if (tg::cuda::info().find("emulator") == std::string::npos) {
    MESSAGE("a stalled collective needs the CUDA emulator's NCCL (TG_CUDA_EMULATE_NCCL_STALL): skipped");
    return;
  }
  TempDir dir;
  dist::init_process_group("nccl", dist::InitOptions().rank(0).world_size(1).init_method("file://" + dir.path.string())
                                       .timeout(std::chrono::milliseconds(300)));
  tg::Tensor t = tg::ones({9}).to(tg::Device::cuda());
  dist::all_reduce(t);
  ::setenv("TG_CUDA_EMULATE_NCCL_STALL", "1", 1);
  // the header all-gather never completes: NCCL is aborted at the timeout, the collective named
  TG_CHECK_THROWS(dist::all_reduce(t), tg::DistributedError,
                  "all_reduce #2: timed out after 300 ms waiting for the other ranks (nccl: NCCL did not complete "
                  "within 300 ms)");
  ::unsetenv("TG_CUDA_EMULATE_NCCL_STALL");
  TG_CHECK_THROWS(dist::barrier(), tg::DistributedError, "barrier: the process group failed earlier (all_reduce #2:");
  dist::destroy_process_group();
  CHECK(!dist::is_initialized());
}

// ---- NCCL with several ranks: 2 and 3 processes on one GPU with the recipe of Note [Several ranks
// on one GPU], or on the CUDA emulator, whose ranks meet in a folder (Note [NCCL ranks on the
// emulator] in tests/cuda_emulator/nccl.cpp). Skipped without a GPU, failing under TG_REQUIRE_CUDA=1
// when NCCL cannot run.

namespace {

/// Whether backend 'nccl' can run here (says why not, or fails under TG_REQUIRE_CUDA=1).
bool nccl_usable() {
  if (dist::is_backend_available("nccl")) return true;
  if (testing::require_cuda()) FAIL("TG_REQUIRE_CUDA=1 but backend 'nccl' is not usable here");
  MESSAGE("NCCL is not usable here: skipped");
  return false;
}

/// The children's environment: backend nccl, every rank on device 0, NCCL over loopback sockets.
std::vector<std::string> nccl_env(std::vector<std::string> more = {}) {
  std::vector<std::string> e{"TG_DIST_BACKEND=nccl", "TG_NCCL_RANKS_ON_DEVICE=0", "NCCL_P2P_DISABLE=1",
                             "NCCL_SHM_DISABLE=1", "NCCL_NET=Socket", "NCCL_SOCKET_IFNAME=lo"};
  e.insert(e.end(), more.begin(), more.end());
  return e;
}

}  // namespace

TEST_CASE("cuda: nccl collectives on 2 processes (env://) and 3 processes (file://) give the exact sums") {
  TG_NEED_CUDA();
  if (!nccl_usable()) return;
  for (int world : {2, 3}) {
    CAPTURE(world);
    TempDir dir;
    require_all_ok(run_ranks("distributed: (child process) collectives", world, all_ranks(world), world == 3, dir,
                             nccl_env(), std::chrono::milliseconds(60000)));
  }
  // mismatched shapes and dtypes are named on every rank, waited for or queued
  TempDir dir;
  require_all_ok(run_ranks("distributed: (child process) mismatched tensors", 2, all_ranks(2), false, dir, nccl_env(),
                           std::chrono::milliseconds(60000)));
}

TEST_CASE("cuda: nccl DDP on 2 and 3 processes matches one process on the whole batch, one host wait per backward") {
  TG_NEED_CUDA();
  if (!nccl_usable()) return;
  for (int world : {2, 3}) {
    CAPTURE(world);
    TempDir dir;
    const auto res = run_ranks("distributed: (child process) DDP training*", world, all_ranks(world), world == 3, dir,
                               nccl_env(), std::chrono::milliseconds(120000));
    require_all_ok(res);
    for (const RankResult& r : res) {   // the count each rank printed (emulator only)
      const auto at = r.out.find("host waits in one DDP backward");
      if (at != std::string::npos) MESSAGE(r.out.substr(at, r.out.find('\n', at) - at));
    }
    for (bool accumulate : {false, true}) {
      CAPTURE(accumulate);
      tg::manual_seed(7);
      Net net;
      train(net, nullptr, 0, world, accumulate);
      const std::vector<float> want = flat_params(net);
      const std::string tag = accumulate ? "acc" : "sync";
      const std::vector<float> r0 = read_floats(dir.path / (tag + "0.bin"));
      REQUIRE(r0.size() == want.size());
      for (int r = 1; r < world; ++r)
        CHECK_MESSAGE(read_floats(dir.path / (tag + std::to_string(r) + ".bin")) == r0, "rank ", r,
                      " differs from rank 0 (must be bitwise identical)");
      testing::check_close(tg::from_vector(r0, {static_cast<int64_t>(r0.size())}),
                           tg::from_vector(want, {static_cast<int64_t>(want.size())}), 1e-4, 1e-5);
    }
  }
}

TEST_CASE("cuda: nccl a rank that withholds a collective is named by the others within the timeout") {
  TG_NEED_CUDA();
  if (!nccl_usable()) return;
  TempDir dir;
  require_all_ok(run_ranks("distributed: (child process) a rank withholds a collective", 2, all_ranks(2), true, dir,
                           nccl_env({"TG_DIST_TIMEOUT_MS=1000", "TG_CUDA_EMULATE_NCCL_PATIENCE_MS=1000"}),
                           std::chrono::milliseconds(60000)));
}
