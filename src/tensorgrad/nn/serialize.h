// nn/serialize.h: checkpoints in the safetensors format: save/load of named Tensors, of a Module's
// parameters and buffers (strict, all-or-nothing), and of an Optimizer's state. Implementation and the
// format notes are in nn/serialize.cpp. Not here: the Module and Optimizer classes themselves, and any
// other file format (pickle, PyTorch .pt).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tensorgrad/engine/tensor.h"

namespace tg {

namespace nn { class Module; }
namespace optim { class Optimizer; }

/// Writes tensors to a safetensors file at path, atomically (a temporary file in the same folder,
/// fsync, then rename). Tensors on another device are copied to the CPU. `metadata` goes into the
/// header's "__metadata__" next to the keys tensorgrad adds ("format": "tensorgrad-1" and one
/// "crc32c.<name>" checksum per tensor), which it may not override. Names must be unique and not
/// "__metadata__". Every failure throws tg::SerializationError naming the path; no temporary file
/// is left behind.
void save_tensors(const std::vector<std::pair<std::string, Tensor>>& tensors, const std::string& path,
                  const std::map<std::string, std::string>& metadata = {});

/// Reads a safetensors file (written by tensorgrad or by another tool) into CPU tensors, in the order
/// of the header, after validating all of it: sizes, JSON, dtypes (F32, F64, I64), shapes, offsets
/// that exactly tile the data section, and the crc32c checksums when the metadata has them. When
/// `metadata` is given it receives the "__metadata__" entries. Throws tg::SerializationError naming
/// the path and the reason.
std::vector<std::pair<std::string, Tensor>> load_tensors(const std::string& path,
                                                         std::map<std::string, std::string>* metadata = nullptr);

/// Saves module.named_parameters() and module.named_buffers() ("fc1.weight", ...).
void save(const nn::Module& module, const std::string& path);
/// Strict load: every missing key, unexpected key, shape and dtype mismatch is listed in one
/// tg::SerializationError, and then the module is unchanged. When all match, the values are copied
/// into the existing parameters and buffers (their handles, storages and devices are kept).
void load(nn::Module& module, const std::string& path);

/// Saves optimizer.state() (SGD: "momentum_buffer.<parameter index>", Adam: "exp_avg.<i>", ...).
void save(const optim::Optimizer& optimizer, const std::string& path);
/// Loads a file written by save(optimizer, ...) through Optimizer::set_state: on a mismatch the
/// optimizer is unchanged and tg::SerializationError names the path.
void load(optim::Optimizer& optimizer, const std::string& path);

namespace detail {
/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): crc32c("123456789") == 0xE3069283.
/// Pass the previous result as `crc` to continue a running checksum.
uint32_t crc32c(const void* data, std::size_t size, uint32_t crc = 0);
}  // namespace detail

}  // namespace tg
