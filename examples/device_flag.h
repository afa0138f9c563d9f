// examples/device_flag.h: the --device flag of the training examples (08, 10, 14, 18, 19): its
// registration, its check after parsing (a device string that tg::Device refuses is a usage error
// naming the flag, exit 2, before any work starts) and the device it names, "auto" meaning the GPU
// when there is one, else the CPU.
#pragma once

#include <tensorgrad.h>

#include <string>

#include "cli.h"

/// Adds `--device DEV` to p, bound to value (whose current value, usually "auto", is the default).
inline void add_device_flag(cli::Parser& p, std::string& value) {
  p.add("--device", value, "DEV", "auto (cuda when available, else cpu), cpu, cuda or cuda:N");
}

/// After p.parse(): stops through p.fail unless value is "auto" or a device string tg::Device accepts
/// ("cpu", "cuda", "cuda:N").
inline void check_device_flag(const cli::Parser& p, const std::string& value) {
  if (value == "auto") return;
  try {
    (void)tg::Device(value);
  } catch (const tg::Error& e) {
    p.fail("--device " + value + ": " + e.what());
  }
}

/// The device a checked --device value names: "auto" is CUDA when available, else the CPU. A CUDA
/// device this build or machine lacks raises tg::Error when a tensor first goes there.
inline tg::Device device_from_flag(const std::string& value) {
  if (value != "auto") return tg::Device(value);
  return tg::cuda::is_available() ? tg::Device::cuda() : tg::Device::cpu();
}
