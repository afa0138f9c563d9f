// bench/common.h: what every benchmark in bench/ shares: its flags (--threads N, --smoke, --budget S,
// --epochs N, --data DIR, --engine, --isolate), the timing harness (warm-up, then the engines' calls interleaved round-robin
// so that a load change on this shared machine hits them alike; median and min..max per engine), the
// aligned table printer, and the "TARGET" lines that bench/run_all.sh collects into the summary.
// Header-only; nothing here includes a libtorch header (that half lives in bench/torch_side.cpp).
#pragma once
#include <tensorgrad.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "cli.h"   // examples/cli.h
#include "torch_side.h"

namespace bench {

using Clock = std::chrono::steady_clock;
using Work = std::function<void()>;   // one repetition of a workload; empty = engine not available

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---- flags (parsed by examples/cli.h) -------------------------------------------------------------

struct Options {
  int threads = 1;
  bool smoke = false;        // tiny sizes, a couple of repetitions: the CTest smoke run
  double budget_s = 2.0;     // seconds of timed calls per measured group (all engines together)
  int epochs = 1;            // bench_fashion_mnist
  std::string data = "/usr/share/datasets/fashion-mnist";
  std::string dir = std::filesystem::temp_directory_path().string();   // bench_checkpoint's file
  std::string engine = "both";   // both, tg or torch: which engines measure_engines() builds and times
  bool isolate = false;          // each engine in a process of its own (measure_engines())
  std::vector<std::string> argv;   // the command line, for the processes --isolate starts
};

/// Every benchmark takes the same flags (make bench's BENCH_ARGS reach all of them; each ignores what it
/// has no use for); --help lists them, a bad one exits 2 naming it (examples/cli.h).
inline Options parse_options(int argc, char** argv, const char* program, const char* about) {
  Options o;
  cli::Parser p(program, about);
  p.add("--threads", o.threads, "N", "threads for both engines", cli::Range::positive);
  p.add("--smoke", o.smoke, "tiny sizes and two repetitions, as CTest runs it (numbers meaningless)");
  p.add("--budget", o.budget_s, "S", "seconds of timed calls per measured group, engines together",
        cli::Range::non_negative);
  p.add("--epochs", o.epochs, "N", "training epochs of bench_fashion_mnist", cli::Range::positive);
  p.add("--data", o.data, "DIR", "Fashion-MNIST folder of bench_fashion_mnist");
  p.add("--dir", o.dir, "DIR", "folder for bench_checkpoint's checkpoint file");
  p.add("--engine", o.engine, "E", "both (default), tg or torch: the engines the rows of measure_engines() time");
  p.add("--isolate", o.isolate, "time each engine in a process of its own (rows of measure_engines())");
  p.parse(argc, argv);
  if (o.engine != "both" && o.engine != "tg" && o.engine != "torch") {
    std::fprintf(stderr, "%s: --engine expects both, tg or torch, got '%s'\n", program, o.engine.c_str());
    std::exit(2);
  }
  for (int i = 0; i < argc; ++i) o.argv.emplace_back(argv[i]);
  return o;
}

/// Threads for both engines: tensorgrad's OpenMP + BLAS, libtorch's intra-op pool (inter-op pool: 1).
inline void set_threads(int n) {
  tg::set_num_threads(n);
  torch_side::set_threads(n);
}

inline std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

/// The title line, with tensorgrad's CPU code path (TG_CPU_CAPABILITY forces one: Note [CPU capabilities]).
inline void print_header(const std::string& title, const Options& o) {
  std::printf("\n== %s | %d thread%s | tensorgrad vs %s | CPU code path %s (best %s) | load %s%s\n", title.c_str(),
              o.threads, o.threads == 1 ? "" : "s",
              torch_side::available() ? ("libtorch " + torch_side::version()).c_str() : "(libtorch not built)",
              tg::cpu_capability_name(), tg::cpu_capability_name(tg::best_cpu_capability()), loadavg().c_str(),
              o.smoke ? " | SMOKE (tiny sizes, numbers meaningless)"
                      : (o.isolate ? " | each engine in its own process" : ""));
}

inline void print_footer() { std::printf("(load at end %s)\n", loadavg().c_str()); }

// ---- timing ------------------------------------------------------------------------------------

struct Stats {
  double median = NAN, min = NAN, max = NAN;   // seconds per call
  int reps = 0;
  bool ok() const { return reps > 0; }
};

inline Stats summarize(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min = v.front();
  s.max = v.back();
  s.reps = static_cast<int>(n);
  return s;
}

struct Plan {
  int warmup = 3;             // untimed calls per engine first (caches, allocator pools, lazy init)
  int min_reps = 5;           // timed calls per engine at least ...
  int max_reps = 1000000;     // ... and at most
  double budget_s = 1.0;      // stop after min_reps once this much time went into timed calls
  double settle_s = 0;        // multi-threaded runs: untimed calls this long before each engine's block
};

inline Plan plan_for(const Options& o, int warmup = 3, int min_reps = 5, double budget_scale = 1.0) {
  Plan p;
  if (o.smoke) {
    p.warmup = 1;
    p.min_reps = 2;
    p.max_reps = 2;
    p.budget_s = 0;
  } else {
    p.warmup = warmup;
    p.min_reps = min_reps;
    p.budget_s = o.budget_s * budget_scale;
    // OpenBLAS's idle threads spin for up to ~0.1 s after a call and OpenMP's for about a millisecond:
    // a block of one engine first waits that out, untimed, so that the other engine's leftover
    // spinning does not count against it (see measure()).
    p.settle_s = o.threads > 1 ? 0.2 : 0.0;
  }
  return p;
}

/// Times each non-empty work: all warm up first, then one timed call each, round-robin, until the plan
/// says stop. Returns seconds per call for each work (reps == 0 for an empty one).
/// With settle_s > 0 (several threads) the engines instead take turns in blocks: two rounds, each
/// engine's block starting with settle_s of untimed calls and then half its timed calls. Idle thread
/// pools of the engine that ran before (libtorch's OpenMP team and OpenBLAS threads, tensorgrad's pool)
/// keep spinning for a while and would otherwise be timed as the next engine's cost.
inline std::vector<Stats> measure(const std::vector<Work>& works, const Plan& plan) {
  std::vector<std::vector<double>> samples(works.size());
  for (const Work& w : works)
    if (w)
      for (int i = 0; i < plan.warmup; ++i) w();
  std::size_t engines = 0;
  for (const Work& w : works) engines += w ? 1 : 0;
  if (plan.settle_s > 0 && engines > 1) {
    constexpr int kRounds = 2;
    const double block_s = plan.budget_s / static_cast<double>(kRounds * engines);
    const int block_min = (plan.min_reps + kRounds - 1) / kRounds;
    for (int round = 0; round < kRounds; ++round)
      for (std::size_t i = 0; i < works.size(); ++i) {
        if (!works[i]) continue;
        const auto settle = Clock::now();
        do works[i](); while (seconds_since(settle) < plan.settle_s);
        const auto start = Clock::now();
        for (int rep = 1;; ++rep) {
          const auto t0 = Clock::now();
          works[i]();
          samples[i].push_back(seconds_since(t0));
          if (rep >= plan.max_reps / kRounds) break;
          if (rep >= block_min && seconds_since(start) >= block_s) break;
        }
      }
  } else {
    const auto start = Clock::now();
    for (int rep = 1;; ++rep) {
      for (std::size_t i = 0; i < works.size(); ++i) {
        if (!works[i]) continue;
        const auto t0 = Clock::now();
        works[i]();
        samples[i].push_back(seconds_since(t0));
      }
      if (rep >= plan.max_reps) break;
      if (rep >= plan.min_reps && seconds_since(start) >= plan.budget_s) break;
    }
  }
  std::vector<Stats> out;
  for (auto& s : samples) out.push_back(summarize(std::move(s)));
  return out;
}

// ---- engines in processes of their own ------------------------------------------------------------
//
// Note [Engines in their own processes]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// With several threads, two engines in one process interfere: libtorch's OpenMP team and OpenBLAS's
// threads keep spinning after a call and steal the cores from tensorgrad's pool, and the other way
// round (on 2 cores the CNN step showed libtorch at 360 ms beside tensorgrad against 40 ms alone).
// measure()'s settle blocks soften it; --isolate removes it for the rows measured through
// measure_engines(): the program runs itself twice, with --engine tg and with --engine torch, each
// child builds and times only its engine (the other's model is never built, so its threads never
// start) and prints one "STAT key index median min max reps" line per row, which the parent reads
// back into its table. The two processes run one after the other.

/// The Stats of one row in the "STAT" lines a child process printed (see the Note).
inline std::vector<std::pair<std::string, Stats>> read_stat_lines(const std::string& text) {
  std::vector<std::pair<std::string, Stats>> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    char key[128];
    int index = 0, reps = 0;
    Stats s;
    if (std::sscanf(line.c_str(), "STAT %127s %d %lf %lf %lf %d", key, &index, &s.median, &s.min, &s.max, &reps) == 6) {
      s.reps = reps;
      out.emplace_back(std::string(key) + "#" + std::to_string(index), s);
    }
  }
  return out;
}

/// The STAT lines of this program run again with `--engine engine` (and without --isolate).
inline std::vector<std::pair<std::string, Stats>> run_engine_process(const Options& o, const std::string& engine) {
  // This program's own file: /proc/self/exe inside popen's shell command would name the shell.
  std::error_code ec;
  std::string cmd = "'" + std::filesystem::read_symlink("/proc/self/exe", ec).string() + "'";
  for (std::size_t i = 1; i < o.argv.size(); ++i) {
    const std::string& a = o.argv[i];
    if (a == "--isolate" || a.rfind("--engine", 0) == 0) {
      if (a == "--engine") ++i;   // and its value
      continue;
    }
    cmd += " '" + a + "'";
  }
  cmd += " --engine " + engine;
  std::string text;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    if (pclose(f) != 0) std::fprintf(stderr, "bench: '%s' failed\n", cmd.c_str());
  }
  return read_stat_lines(text);
}

/// One row of two engines: tensorgrad's work made by make_tg, libtorch's by make_torch (each built only
/// when its engine runs). Both in this process (interleaved, measure()), one of them (--engine), or
/// each in a process of its own (--isolate: Note [Engines in their own processes]); `key` names the
/// row in the children's output. Returns {tensorgrad, libtorch}, an engine not run giving empty Stats.
inline std::vector<Stats> measure_engines(const std::string& key, const std::function<Work()>& make_tg,
                                          const std::function<Work()>& make_torch, const Plan& plan,
                                          const Options& o) {
  if (o.isolate && o.engine == "both") {
    static const std::vector<std::pair<std::string, Stats>> tg_rows = run_engine_process(o, "tg");
    static const std::vector<std::pair<std::string, Stats>> torch_rows = run_engine_process(o, "torch");
    const auto find = [](const std::vector<std::pair<std::string, Stats>>& rows, const std::string& k) {
      for (const auto& r : rows)
        if (r.first == k) return r.second;
      return Stats{};
    };
    return {find(tg_rows, key + "#0"), find(torch_rows, key + "#1")};
  }
  const Work tg = o.engine != "torch" ? make_tg() : Work();
  const Work torch = o.engine != "tg" ? make_torch() : Work();
  const std::vector<Stats> st = measure({tg, torch}, plan);
  if (o.engine != "both")
    for (std::size_t i = 0; i < st.size(); ++i)
      if (st[i].ok())
        std::printf("STAT %s %zu %.9g %.9g %.9g %d\n", key.c_str(), i, st[i].median, st[i].min, st[i].max, st[i].reps);
  return st;
}

// ---- formatting --------------------------------------------------------------------------------

inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

/// "median [min..max]" of s scaled (e.g. 1e6 for µs), or "n/a".
inline std::string cell(const Stats& s, double scale, const char* f = "%.1f") {
  if (!s.ok()) return "n/a";
  return fmt(f, s.median * scale) + " [" + fmt(f, s.min * scale) + ".." + fmt(f, s.max * scale) + "]";
}

inline std::string ratio_str(double r) { return std::isfinite(r) ? fmt("%.2fx", r) : "n/a"; }

/// Median time ratio a/b (tensorgrad / libtorch), NaN when either is missing.
inline double time_ratio(const Stats& a, const Stats& b) { return a.ok() && b.ok() ? a.median / b.median : NAN; }

class Table {
 public:
  explicit Table(std::vector<std::string> headers) : rows_{std::move(headers)} {}
  void row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  void print() const {
    std::vector<std::size_t> width;
    for (const auto& r : rows_)
      for (std::size_t i = 0; i < r.size(); ++i) {
        if (width.size() <= i) width.push_back(0);
        width[i] = std::max(width[i], r[i].size());
      }
    for (std::size_t k = 0; k < rows_.size(); ++k) {
      std::string line;
      for (std::size_t i = 0; i < rows_[k].size(); ++i) {
        line += rows_[k][i];
        if (i + 1 < rows_[k].size()) line += std::string(width[i] - rows_[k][i].size() + 2, ' ');
      }
      std::printf("%s\n", line.c_str());
      if (k == 0) std::printf("%s\n", std::string(line.size(), '-').c_str());
    }
    std::fflush(stdout);
  }
 private:
  std::vector<std::vector<std::string>> rows_;
};

// ---- targets --------------------------------------------------------------------------

/// "met" / "MISSED", or "n/a" when the row could not be measured (no libtorch).
inline std::string verdict(double value, bool met) { return std::isfinite(value) ? (met ? "met" : "MISSED") : "n/a"; }

/// One line per target row; bench/run_all.sh greps "^TARGET" into the final summary. threads 0 means
/// the row does not depend on the thread count. The 1-minute load average comes first: the benchmark
/// itself adds about 1 per thread it runs; well above that, someone else was computing on this 2-core
/// machine and the row may be disturbed.
inline void print_target(const std::string& workload, int threads, const std::string& measured,
                         const std::string& target, const std::string& verdict_text) {
  const std::string t = threads == 0 ? "-" : std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  std::printf("TARGET  load %-5s  %-46s %-10s %-44s %-37s %s\n", loadavg().substr(0, loadavg().find(' ')).c_str(),
              workload.c_str(), t.c_str(), measured.c_str(), target.c_str(), verdict_text.c_str());
  std::fflush(stdout);
}

}  // namespace bench
