// tests/test_faults.cpp: checkpoint writes that die or run out of room (io/safetensors.h). A forked child
// saving in a loop is SIGKILLed at several moments: the file on disk is always one whole checkpoint.
// A forked child whose file-size limit cuts the write at many byte positions gets SerializationError,
// leaves no temporary file and the previous checkpoint intact. (In-process save failures, a missing
// folder and a 100-byte limit on a new file, are in tests/test_serialize.cpp.)
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "testing.h"

namespace fs = std::filesystem;
using tg::Tensor;

namespace {

struct FaultNet : tg::nn::Module {
  tg::nn::Linear fc1, fc2;
  FaultNet(int64_t in, int64_t hidden, int64_t out) : fc1(in, hidden), fc2(hidden, out) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override { return fc2(tg::relu(fc1(x))); }
};

struct FaultDir : testing::TempDir {
  FaultDir() : testing::TempDir("tg_faults") {}
};

std::string file_bytes(const std::string& path) { return testing::read_bytes(path); }

std::string module_bytes(const tg::nn::Module& m) {
  std::string out;
  for (const auto& p : m.named_parameters()) {
    const tg::RawTensor c = p.second.data().contiguous();
    out += p.first + ":";
    out.append(static_cast<const char*>(c.raw_data()), std::size_t(c.numel()) * tg::dtype_size(c.dtype()));
  }
  return out;
}

/// Waits for the child and returns its exit code, or 128 + signal when a signal ended it.
int wait_child(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 255;
}

}  // namespace

TEST_CASE("faults: a checkpoint write killed midway leaves the previous checkpoint loadable and whole") {
  FaultDir dir;
  const std::string path = dir.file("model.safetensors");
  tg::manual_seed(11);
  FaultNet a(1023, 2049, 10);   // ~8 MiB of float32: writing it takes a few ms
  tg::manual_seed(12);
  FaultNet b(1023, 2049, 10);
  const std::string bytes_a = module_bytes(a), bytes_b = module_bytes(b);
  REQUIRE(bytes_a != bytes_b);
  tg::save(a, path);

  // Each round kills the child a little later after its temporary file appears: while the header,
  // the data, the fsync or the rename is under way. (Most of a save before that is checksumming.)
  int killed_midway = 0;
  const int delays_us[] = {0, 200, 500, 1000, 2000, 4000, 8000, 16000};
  for (int delay : delays_us) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {   // the child saves b over the checkpoint until it is killed
      try {
        for (;;) tg::save(b, path);
      } catch (...) {
        ::_exit(3);
      }
    }
    // the child's temporary files are "<path>.tmp.<pid>.<n>", one n per save
    const std::string tmp_prefix = fs::path(path).filename().string() + ".tmp." + std::to_string(pid) + ".";
    auto child_tmp_exists = [&] {
      for (const auto& e : fs::directory_iterator(fs::path(path).parent_path()))
        if (e.path().filename().string().rfind(tmp_prefix, 0) == 0) return true;
      return false;
    };
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!child_tmp_exists() && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    std::this_thread::sleep_for(std::chrono::microseconds(delay));
    REQUIRE(::kill(pid, SIGKILL) == 0);
    CHECK(wait_child(pid) == 128 + SIGKILL);
    if (child_tmp_exists()) ++killed_midway;   // a killed writer cannot clean up after itself ...

    FaultNet loaded(1023, 2049, 10);
    tg::load(loaded, path);   // must not throw: the file is one whole checkpoint
    const std::string got = module_bytes(loaded);
    CHECK_MESSAGE((got == bytes_a || got == bytes_b), "after a kill " << delay << " us into a write the checkpoint is neither a nor b");
  }
  MESSAGE(killed_midway << " of 8 kills landed while a temporary file was being written");
  CHECK(killed_midway >= 2);   // the test really interrupted writes
  // ... the next save of the same checkpoint removes what the killed ones left, and works.
  tg::save(a, path);
  CHECK(dir.temp_files().empty());
  FaultNet again(1023, 2049, 10);
  tg::load(again, path);
  CHECK(module_bytes(again) == bytes_a);
}

TEST_CASE("faults: a write cut short at any byte gives SerializationError and keeps the previous checkpoint") {
  FaultDir dir;
  const std::string path = dir.file("model.safetensors");
  tg::manual_seed(21);
  FaultNet a(33, 17, 5);
  tg::manual_seed(22);
  FaultNet b(33, 17, 5);
  tg::save(a, path);
  const std::string before = file_bytes(path);
  const auto size = static_cast<rlim_t>(before.size());
  REQUIRE(size > 1000);
  struct rlimit old {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
  if (old.rlim_max != RLIM_INFINITY && old.rlim_max < size) {
    MESSAGE("skipping: the RLIMIT_FSIZE hard limit is below the checkpoint size");
    return;
  }
  // Cut points: inside the length prefix, at its end, inside the header, inside the data, one byte short.
  const std::vector<rlim_t> limits{0, 1, 7, 8, 9, 100, size / 2, size - 8, size - 1};

  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {   // in the child: no doctest macros, the exit code says what went wrong
    ::alarm(60);                  // a hang fails the test instead of stalling the suite
    ::signal(SIGXFSZ, SIG_IGN);   // a write past the limit fails with EFBIG instead of killing the process
    int code = 0;
    for (std::size_t i = 0; i < limits.size() && code == 0; ++i) {
      struct rlimit lim = old;
      lim.rlim_cur = limits[i];
      if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) { code = 10; break; }
      std::string message;
      try {
        tg::save(b, path);
        code = 11;   // the save should have failed
      } catch (const tg::SerializationError& e) {
        message = e.what();
      } catch (...) {
        code = 12;   // any other exception type breaks the error contract
      }
      ::setrlimit(RLIMIT_FSIZE, &old);
      if (code) {
        std::fprintf(stderr, "limit %llu: code %d\n", static_cast<unsigned long long>(limits[i]), code);
        break;
      }
      if (message.find(path) == std::string::npos || message.find("File too large") == std::string::npos) code = 13;
      else if (!dir.temp_files().empty()) code = 14;
      else if (file_bytes(path) != before) code = 15;
      if (code) std::fprintf(stderr, "limit %llu: code %d: %s\n", static_cast<unsigned long long>(limits[i]), code,
                             message.c_str());
    }
    if (code == 0) {
      try {
        tg::save(b, path);   // with the limit lifted the same save succeeds
      } catch (...) {
        code = 16;
      }
    }
    std::fflush(stderr);
    ::_exit(code);
  }
  CHECK(wait_child(pid) == 0);   // 11: no error; 12: wrong type; 13: message; 14: temp file left; 15: file changed
  CHECK(dir.temp_files().empty());
  FaultNet loaded(33, 17, 5);
  tg::load(loaded, path);
  CHECK(module_bytes(loaded) == module_bytes(b));
}

TEST_CASE("faults: a save removes the temporary files of killed saves and keeps those of live ones") {
  FaultDir dir;
  const std::string path = dir.file("m.safetensors");
  const pid_t dead = ::fork();   // a process that has exited and been reaped
  REQUIRE(dead >= 0);
  if (dead == 0) ::_exit(0);
  REQUIRE(wait_child(dead) == 0);
  const std::string stale = path + ".tmp." + std::to_string(dead) + ".0";
  const std::string stale_old = path + ".tmp." + std::to_string(dead);   // the name without a save counter
  const std::string live = path + ".tmp." + std::to_string(::getppid()) + ".3";   // our parent: alive
  const std::string other = dir.file("other.safetensors.tmp." + std::to_string(dead) + ".0");   // another checkpoint's
  for (const std::string& f : {stale, stale_old, live, other}) std::ofstream(f) << "partial";
  tg::manual_seed(13);
  FaultNet net(4, 3, 2);
  tg::save(net, path);
  CHECK_FALSE(fs::exists(stale));
  CHECK_FALSE(fs::exists(stale_old));
  CHECK(fs::exists(live));
  CHECK(fs::exists(other));
  FaultNet loaded(4, 3, 2);
  tg::load(loaded, path);
  CHECK(module_bytes(loaded) == module_bytes(net));
}

TEST_CASE("faults: fork while another thread allocates tensors leaves the child able to allocate") {
  // First use here: a fork while another thread runs a function-local static's initializer (the
  // CPU backend's, on the first RawTensor) hangs the child in the C++ runtime's guard, which no library
  // can prevent; this test is about the allocator's lock.
  (void)tg::RawTensor::empty({1}, tg::kFloat32);
  std::atomic<bool> stop{false};
  std::thread churn([&] {   // takes and releases the CPU allocator's lock as fast as it can
    while (!stop.load()) tg::RawTensor::empty({64}, tg::kFloat32);
  });
  int hung = 0, failed = 0;
  for (int round = 0; round < 40; ++round) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {   // only this thread exists here; the allocator's lock must be free
      const tg::RawTensor t = tg::RawTensor::empty({1000}, tg::kFloat32);
      ::_exit(t.numel() == 1000 ? 0 : 1);
    }
    int status = 0;
    pid_t done = 0;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (done == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ++hung;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failed;
    }
  }
  stop = true;
  churn.join();
  CHECK(hung == 0);
  CHECK(failed == 0);
}

TEST_CASE("faults: threads saving one checkpoint at once always leave one whole, valid file") {
  FaultDir dir;
  const std::string path = dir.file("m.safetensors");
  std::vector<std::unique_ptr<FaultNet>> nets;
  std::vector<std::string> bytes;
  for (int t = 0; t < 4; ++t) {
    tg::manual_seed(100 + t);
    nets.push_back(std::make_unique<FaultNet>(64, 33, 5));
    bytes.push_back(module_bytes(*nets.back()));
  }
  tg::save(*nets[0], path);
  std::atomic<int> errors{0}, bad_loads{0};
  std::atomic<bool> done{false};
  std::thread reader([&] {   // every file the writers leave at the path must load whole
    while (!done.load()) {
      FaultNet loaded(64, 33, 5);
      try {
        tg::load(loaded, path);
        if (std::find(bytes.begin(), bytes.end(), module_bytes(loaded)) == bytes.end()) ++bad_loads;
      } catch (...) {
        ++bad_loads;
      }
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 25; ++k) {
        try {
          tg::save(*nets[t], path);
        } catch (...) {
          ++errors;
        }
      }
    });
  for (auto& th : threads) th.join();
  done = true;
  reader.join();
  CHECK(errors.load() == 0);
  CHECK(bad_loads.load() == 0);
  FaultNet loaded(64, 33, 5);
  tg::load(loaded, path);   // checksums verified: one writer's complete file
  const std::string got = module_bytes(loaded);
  CHECK(std::find(bytes.begin(), bytes.end(), got) != bytes.end());
  CHECK(dir.temp_files().empty());
}
