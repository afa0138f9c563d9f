/// \file
/// io/safetensors.h: named tensors in the safetensors format: save_tensors writes a file atomically
/// with a CRC-32C per tensor, load_tensors reads any safetensors file strictly; LoadOptions says how a
/// checkpoint is loaded. Implementation and the format notes: io/safetensors.cpp. Checkpoints of
/// modules, optimizers and GradScalers built on these: io/checkpoint.h.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tensorgrad/core/raw_tensor.h"
#include "tensorgrad/io/crc32c.h"

namespace tg {

/// How a checkpoint is loaded (PyTorch's load_state_dict(strict=...) plus the checksum check), e.g.
/// tg::load(model, path, tg::LoadOptions().strict(false)).
struct LoadOptions {
  /// Module loads: true (default) requires the file's keys to be exactly the module's parameters and
  /// buffers; false loads the keys both have and returns the others (IncompatibleKeys). Shape and
  /// dtype mismatches fail either way. An optimizer's state always loads whole (strict(false) is refused).
  LoadOptions& strict(bool s) { strict_ = s; return *this; }
  /// true (default): tensor bytes must match the crc32c checksums recorded in the header. false: the
  /// checksums are not read, for a file whose tensors another tool rewrote but whose metadata it kept.
  LoadOptions& verify_checksums(bool v) { verify_checksums_ = v; return *this; }
  bool strict_ = true;             ///< see strict()
  bool verify_checksums_ = true;   ///< see verify_checksums()
};

/// Writes tensors to a safetensors file at path, atomically (a temporary file in the same folder,
/// fsync, then rename). RawTensors on another device are copied to the CPU. `metadata` goes into the
/// header's "__metadata__" next to the keys tensorgrad adds, which it may not override: "format": "pt"
/// (what the Hugging Face loaders require), "tensorgrad.checksums": "crc32c" and one
/// "crc32c.<name>" checksum per tensor. Names must be unique and not "__metadata__". Every failure
/// throws tg::SerializationError naming the path; no temporary file is left behind.
void save_tensors(const std::vector<std::pair<std::string, RawTensor>>& tensors, const std::string& path,
                  const std::map<std::string, std::string>& metadata = {});

/// Reads a safetensors file (written by tensorgrad or by another tool) into CPU tensors, in the order
/// of the header, after validating all of it: sizes, JSON, dtypes (F32, F64, I64), shapes, offsets
/// that exactly tile the data section, and (unless options.verify_checksums(false)) the crc32c
/// checksums when the metadata has them; a file tensorgrad wrote must have one per tensor. When
/// `metadata` is given it receives the "__metadata__" entries. Throws tg::SerializationError naming
/// the path and the reason. Only options.verify_checksums applies here.
std::vector<std::pair<std::string, RawTensor>> load_tensors(const std::string& path,
                                                         std::map<std::string, std::string>* metadata = nullptr,
                                                         const LoadOptions& options = {});

}  // namespace tg
