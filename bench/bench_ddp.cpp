// bench/bench_ddp.cpp: DistributedDataParallel on 2 processes against 1 process on the same machine:
// samples/s of the MLP 784-256-10 training step (batch 64 per rank), the fraction of the all-reduce
// time hidden behind backward, and the bytes all-reduced per step against the model's size. Run
// without RANK it is the driver: it starts itself as the ranks (posix_spawn, file:// rendezvous in a
// temp folder) for each configuration and prints the table; with RANK set it is one rank and prints
// one result line. No libtorch side: libtorch's C++ API has no DistributedDataParallel.
#include "common.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

extern char** environ;

namespace {

struct Net : tg::nn::Module {
  tg::nn::Linear fc1{784, 256}, fc2{256, 10};
  Net() { register_module("fc1", fc1); register_module("fc2", fc2); }
  tg::Tensor forward(const tg::Tensor& x) override { return fc2(tg::relu(fc1(x))); }
};

constexpr int64_t kBatch = 64;

/// One rank: timed training steps; rank 0 prints "result samples_per_s comm_ms exposed_ms bytes model_bytes".
int run_rank(const bench::Options& o) {
  tg::set_num_threads(o.threads);
  tg::distributed::init_process_group("gloo", tg::distributed::InitOptions().init_method(std::getenv("TG_BENCH_INIT"))
                                                   .timeout(std::chrono::seconds(60)));
  const int rank = tg::distributed::get_rank(), world = tg::distributed::get_world_size();
  tg::manual_seed(0);
  Net net;
  const char* cap = std::getenv("TG_BENCH_BUCKET_MB");
  tg::nn::parallel::DistributedDataParallel ddp(
      net, tg::nn::parallel::DistributedDataParallelOptions().bucket_cap_mb(cap ? std::atof(cap) : 25.0));
  tg::optim::SGD opt(ddp.parameters(), tg::optim::SGDOptions(0.01).momentum(0.9));
  tg::nn::CrossEntropyLoss ce;
  tg::manual_seed(1 + rank);
  const tg::Tensor x = tg::rand({kBatch, 784}), y = tg::randint(0, 10, {kBatch});
  const int warmup = o.smoke ? 1 : 10, reps = o.smoke ? 3 : std::max(20, static_cast<int>(o.budget_s * 200));
  std::vector<double> step, comm, exposed;
  int64_t bytes = 0;
  for (int i = 0; i < warmup + reps; ++i) {
    tg::distributed::barrier();   // every rank starts the step together
    const auto t0 = bench::Clock::now();
    opt.zero_grad();
    ce(ddp(x), y).backward();
    opt.step();
    const double s = bench::seconds_since(t0);
    if (i < warmup) continue;
    step.push_back(s);
    const auto st = ddp.last_stats();
    comm.push_back(st.comm_seconds);
    exposed.push_back(st.exposed_seconds);
    bytes = st.bytes;
  }
  int64_t model_bytes = 0;
  for (auto& p : net.parameters()) model_bytes += p.numel() * static_cast<int64_t>(sizeof(float));
  if (rank == 0)
    std::printf("result %.1f %.4f %.4f %lld %lld\n", world * kBatch / bench::summarize(step).median,
                bench::summarize(comm).median * 1e3, bench::summarize(exposed).median * 1e3,
                static_cast<long long>(bytes), static_cast<long long>(model_bytes));
  tg::distributed::destroy_process_group();
  return 0;
}

/// Starts `world` ranks of this binary with `threads` threads each and returns rank 0's result line.
std::string launch(int world, int threads, double bucket_mb, bool smoke) {
  char tmpl[] = "/tmp/tg_bench_ddp_XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return "";
  const std::string dir = tmpl, self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) env.push_back(*e);
    env.push_back("RANK=" + std::to_string(r));
    env.push_back("WORLD_SIZE=" + std::to_string(world));
    env.push_back("TG_BENCH_INIT=file://" + dir + "/rdv");
    env.push_back("TG_BENCH_BUCKET_MB=" + std::to_string(bucket_mb));
    std::vector<char*> envp;
    for (auto& s : env) envp.push_back(&s[0]);
    envp.push_back(nullptr);
    std::string a0 = self, a1 = "--threads", a2 = std::to_string(threads), a3 = smoke ? "--smoke" : "--budget=2";
    char* argv[] = {&a0[0], &a1[0], &a2[0], &a3[0], nullptr};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    const std::string out = dir + "/rank" + std::to_string(r) + ".out";
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    if (::posix_spawn(&pid, self.c_str(), &fa, nullptr, argv, envp.data()) == 0) pids.push_back(pid);
    posix_spawn_file_actions_destroy(&fa);
  }
  bool ok = static_cast<int>(pids.size()) == world;
  for (pid_t p : pids) {
    int st = 0;
    ::waitpid(p, &st, 0);
    ok = ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  std::ifstream f(dir + "/rank0.out");
  std::stringstream ss;
  ss << f.rdbuf();
  std::filesystem::remove_all(dir);
  const std::string s = ss.str();
  const auto at = s.find("result ");
  return ok && at != std::string::npos ? s.substr(at + 7) : "";
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Options o = bench::parse_options(
      argc, argv, "bench_ddp",
      "DistributedDataParallel (Gloo, loopback) on 2 processes vs 1 process: MLP 784-256-10 training step, batch 64 per rank.");
  if (std::getenv("RANK") != nullptr) return run_rank(o);
  if (!tg::distributed::is_available()) {
    std::printf("bench_ddp: built without Gloo (TENSORGRAD_DISTRIBUTED): nothing to measure\n");
    return 0;
  }
  std::printf("\n== DistributedDataParallel, MLP 784-256-10, batch 64 per rank, Gloo over loopback | CPU code path %s | load %s%s\n",
              tg::cpu_capability_name(), bench::loadavg().c_str(), o.smoke ? " | SMOKE (numbers meaningless)" : "");
  std::printf("%-42s %12s %12s %12s %10s %16s\n", "configuration", "samples/s", "all-reduce", "exposed", "hidden",
              "bytes/step");
  struct Config {
    int world, threads;
    double bucket_mb;   // 25: PyTorch's default, one bucket for this model; 0.1: fc2 apart from fc1
  };
  int failures = 0;
  double base = 0;
  for (const Config& c : {Config{1, 2, 25}, Config{1, 1, 25}, Config{2, 1, 25}, Config{2, 1, 0.1}}) {
    const std::string r = launch(c.world, c.threads, c.bucket_mb, o.smoke);
    double sps = 0, comm = 0, exposed = 0;
    long long bytes = 0, model = 0;
    if (r.empty() || std::sscanf(r.c_str(), "%lf %lf %lf %lld %lld", &sps, &comm, &exposed, &bytes, &model) != 5) {
      std::printf("%d process(es) x %d thread(s): FAILED\n", c.world, c.threads);
      ++failures;
      continue;
    }
    if (c.world == 1 && c.threads == 2) base = sps;
    const std::string name = std::to_string(c.world) + (c.world == 1 ? " process x " : " processes x ") +
                             std::to_string(c.threads) + (c.threads == 1 ? " thread" : " threads") +
                             (c.bucket_mb < 25 ? ", 0.1 MB buckets" : "");
    std::printf("%-42s %12.0f %10.3fms %10.3fms %9.0f%% %9lld (%.2fx model)%s\n", name.c_str(), sps, comm, exposed,
                comm > 0 ? 100 * std::max(0.0, 1 - exposed / comm) : 0.0, bytes, model > 0 ? double(bytes) / model : 0.0,
                base > 0 && c.world == 2 ? (" " + bench::ratio_str(sps / base) + " of 1 x 2").c_str() : "");
  }
  std::printf("(all-reduce: the communication thread's time per step; exposed: what backward's last hook waited;\n"
              " hidden = 1 - exposed / all-reduce; bytes/step: gradient payload each rank all-reduces, a ring sends\n"
              " 2 (N-1)/N of it per rank)\n");
  bench::print_footer();
  return failures == 0 ? 0 : 1;
}
