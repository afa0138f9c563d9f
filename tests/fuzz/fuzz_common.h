// tests/fuzz/fuzz_common.h: helpers shared by the libFuzzer targets: a per-process scratch file the
// input bytes are written to (the loaders under test read paths), and bug(), which prints what broke
// the contract and aborts so that libFuzzer records a crash. Aborting is only ever done here, in the
// fuzz targets: the library itself throws.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace fuzz {

/// Prints "fuzz contract violated: <what>" and aborts (libFuzzer saves the input as a crash).
[[noreturn]] inline void bug(const std::string& what) {
  std::fprintf(stderr, "fuzz contract violated: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

/// A scratch path in $TMPDIR (or /tmp) unique to this process, removed at exit.
inline const std::string& scratch_path(const char* suffix) {
  struct Scratch {
    std::string path;
    ~Scratch() { std::remove(path.c_str()); }
  };
  static Scratch s{[&] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/tg_fuzz_" + std::to_string(::getpid()) + suffix;
  }()};
  return s.path;
}

/// Replaces the scratch file's contents with data[0, size).
inline void write_file(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) bug("cannot create the scratch file " + path);
  if (size && std::fwrite(data, 1, size, f) != size) bug("cannot write the scratch file " + path);
  if (std::fclose(f) != 0) bug("cannot close the scratch file " + path);
}

}  // namespace fuzz
