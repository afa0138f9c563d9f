// bench/bench_checkpoint.cpp: checkpoint speed (io/checkpoint.h) for a 256 MiB float32 module (four
// Linear(4096, 4096)): tg::save (with its fsync), tg::load_tensors, tg::load into the module, against a
// plain read() of the same file into a reused buffer, all with the file warm in the page cache, and the
// CRC-32C of the file's bytes (SSE4.2 path when the CPU has it, and the portable one). Target:
// load <= 2x read. tensorgrad only: there is no libtorch half.
// Usage: bench_checkpoint [--budget S] [--smoke] [--dir FOLDER]   (default folder: the system temp folder)
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <stdexcept>

#include "common.h"

namespace {

struct Big : tg::nn::Module {
  std::vector<std::unique_ptr<tg::nn::Linear>> layers;
  Big(int count, int64_t width) {
    for (int i = 0; i < count; ++i) {
      layers.push_back(std::make_unique<tg::nn::Linear>(width, width));
      register_module("fc" + std::to_string(i), *layers.back());
    }
  }
};

/// read() of the whole file into buf (sized to the file), the way a plain reader does it.
void plain_read(const std::string& path, std::vector<char>& buf) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error("cannot open " + path);
  std::size_t done = 0;
  while (done < buf.size()) {
    const ssize_t n = ::read(fd, buf.data() + done, buf.size() - done);
    if (n <= 0) break;
    done += std::size_t(n);
  }
  ::close(fd);
  if (done != buf.size()) throw std::runtime_error("short read of " + path);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "bench_checkpoint",
                                  "save and load of a 256 MiB checkpoint against a plain read() of the file");
  const std::string dir = o.dir;
  tg::manual_seed(0);
  const int64_t width = o.smoke ? 64 : 4096;
  Big model(4, width);
  const std::string path = dir + "/tg_bench_checkpoint_" + std::to_string(::getpid()) + ".safetensors";

  std::printf("\n== checkpoint of 4x Linear(%lld, %lld) float32 in %s; ms per call, median [min..max] | load %s%s\n",
              static_cast<long long>(width), static_cast<long long>(width), dir.c_str(), loadavg().c_str(),
              o.smoke ? " | SMOKE (tiny sizes, numbers meaningless)" : "");
  Plan plan = plan_for(o, 2, 5, 1.0);
  Plan save_plan = plan;
  if (!o.smoke) save_plan.warmup = 1;
  const Stats save = measure({[&] { tg::save(model, path); }}, save_plan)[0];
  const auto file_bytes = std::filesystem::file_size(path);
  std::vector<char> buf(file_bytes);
  Big target(4, width);
  const auto s = measure({[&] { plain_read(path, buf); },
                          [&] { (void)tg::load_tensors(path); },
                          [&] { tg::load(target, path); }},
                         plan);
  std::remove(path.c_str());
  const auto crc = measure({[&] { (void)tg::detail::crc32c(buf.data(), buf.size()); },
                            [&] { (void)tg::detail::crc32c_portable(buf.data(), buf.size()); }},
                           plan);

  const double mib = double(file_bytes) / (1 << 20);
  auto rate = [&](const Stats& st) { return st.ok() ? fmt("%.2f GB/s", double(file_bytes) / st.median / 1e9) : "n/a"; };
  Table table({"operation", "ms", "throughput", "vs read()"});
  table.row({"read() into a buffer", cell(s[0], 1e3), rate(s[0]), "1.00x"});
  table.row({"tg::load_tensors", cell(s[1], 1e3), rate(s[1]), ratio_str(time_ratio(s[1], s[0]))});
  table.row({"tg::load(module)", cell(s[2], 1e3), rate(s[2]), ratio_str(time_ratio(s[2], s[0]))});
  table.row({"tg::save(module) incl. fsync", cell(save, 1e3), rate(save), ratio_str(time_ratio(save, s[0]))});
  table.row({"crc32c of the file's bytes", cell(crc[0], 1e3), rate(crc[0]), ratio_str(time_ratio(crc[0], s[0]))});
  table.row({"crc32c_portable (no SSE4.2)", cell(crc[1], 1e3), rate(crc[1]), ratio_str(time_ratio(crc[1], s[0]))});
  table.print();
  std::printf("file: %.1f MiB\n", mib);
  const double r = time_ratio(s[2], s[0]);
  if (!o.smoke) print_target("checkpoint load(module) 256 MiB vs read()", 0, ratio_str(r) + " read()", "target <= 2x",
                             verdict(r, r <= 2.0));
  print_footer();
  return 0;
}
