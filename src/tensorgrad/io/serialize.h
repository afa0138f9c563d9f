// io/serialize.h: checkpoints in the safetensors format: save/load of named Tensors, of a Module's
// parameters and buffers (strict or not, all-or-nothing), and of an Optimizer's state, with their
// LoadOptions. Implementation and the format notes are in io/serialize.cpp. Not here: the Module and
// Optimizer classes themselves, and any other file format (pickle, PyTorch .pt).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tensorgrad/core/tensor.h"

namespace tg {

namespace nn { class Module; }
namespace optim { class Optimizer; }
namespace amp { class GradScaler; }

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

/// What a module load did not match, as PyTorch's load_state_dict returns it (empty when strict).
struct IncompatibleKeys {
  std::vector<std::string> missing_keys;      ///< the module's names that the file lacks (left unchanged)
  std::vector<std::string> unexpected_keys;   ///< the file's names that the module lacks (ignored)
};

/// Writes tensors to a safetensors file at path, atomically (a temporary file in the same folder,
/// fsync, then rename). Tensors on another device are copied to the CPU. `metadata` goes into the
/// header's "__metadata__" next to the keys tensorgrad adds, which it may not override: "format": "pt"
/// (what the Hugging Face loaders require), "tensorgrad.checksums": "crc32c" and one
/// "crc32c.<name>" checksum per tensor. Names must be unique and not "__metadata__". Every failure
/// throws tg::SerializationError naming the path; no temporary file is left behind.
void save_tensors(const std::vector<std::pair<std::string, Tensor>>& tensors, const std::string& path,
                  const std::map<std::string, std::string>& metadata = {});

/// Reads a safetensors file (written by tensorgrad or by another tool) into CPU tensors, in the order
/// of the header, after validating all of it: sizes, JSON, dtypes (F32, F64, I64), shapes, offsets
/// that exactly tile the data section, and (unless options.verify_checksums(false)) the crc32c
/// checksums when the metadata has them; a file tensorgrad wrote must have one per tensor. When
/// `metadata` is given it receives the "__metadata__" entries. Throws tg::SerializationError naming
/// the path and the reason. Only options.verify_checksums applies here.
std::vector<std::pair<std::string, Tensor>> load_tensors(const std::string& path,
                                                         std::map<std::string, std::string>* metadata = nullptr,
                                                         const LoadOptions& options = {});

/// Saves module.named_parameters() and module.named_buffers() ("fc1.weight", ...).
void save(const nn::Module& module, const std::string& path);
/// Loads a file into the module's parameters and buffers: their values are written in, their handles,
/// storages and devices are kept (views of them see the new values). Shape and dtype mismatches, and
/// missing and unexpected keys when strict, are listed in one tg::SerializationError; a damaged file or
/// checksums that do not match throw from load_tensors first. After any error the module is unchanged.
/// Not strict: the keys both have are loaded and the others returned.
IncompatibleKeys load(nn::Module& module, const std::string& path, const LoadOptions& options = {});

/// Saves optimizer.state() (SGD: "momentum_buffer.<parameter index>", Adam: "exp_avg.<i>", ...).
void save(const optim::Optimizer& optimizer, const std::string& path);
/// Loads a file written by save(optimizer, ...) through Optimizer::set_state: on a mismatch the
/// optimizer is unchanged and tg::SerializationError names the path.
void load(optim::Optimizer& optimizer, const std::string& path, const LoadOptions& options = {});

/// Saves scaler.state_dict() as a safetensors file (an empty one for a disabled scaler).
void save(const amp::GradScaler& scaler, const std::string& path);
/// Loads a file written by save(scaler, ...) through GradScaler::load_state_dict: on a mismatch the
/// scaler is unchanged and tg::SerializationError names the path. options.strict(false) is refused.
void load(amp::GradScaler& scaler, const std::string& path, const LoadOptions& options = {});

namespace detail {
/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): crc32c("123456789") == 0xE3069283.
/// Pass the previous result as `crc` to continue a running checksum. Uses the SSE4.2 crc32
/// instruction when the CPU has it (checked at run time), else crc32c_portable.
uint32_t crc32c(const void* data, std::size_t size, uint32_t crc = 0);
/// The same checksum without special instructions (slicing by 8 bytes).
uint32_t crc32c_portable(const void* data, std::size_t size, uint32_t crc = 0);
}  // namespace detail

}  // namespace tg
