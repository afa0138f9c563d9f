/// \file
/// core/error.h: the error hierarchy every tensorgrad failure is reported through, and TG_CHECK.
/// Nothing a user or a file controls may abort, assert or exit: it throws one of these instead.
/// Messages name the op and the operands (docs/guarantees.md, "Errors"), in PyTorch's words where PyTorch has
/// a message for the same failure. Catch tg::Error for any of them.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>

namespace tg {

/// The base of every tensorgrad error (PyTorch's c10::Error); what() is the message. Thrown as itself
/// for failures without a more specific kind (a bad device string, a bad option value).
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// Shapes that do not fit the op: broadcasting, matmul sizes, view strides, a shape overflowing int64.
struct ShapeError : Error { using Error::Error; };
/// A dim or an index out of range (PyTorch's IndexError).
struct IndexError : Error { using Error::Error; };
/// A dtype the op does not accept, or operands of different dtypes.
struct DTypeError : Error { using Error::Error; };
/// Operands on different devices, or a device that cannot be used (no GPU, bad index).
struct DeviceError : Error { using Error::Error; };
/// Misuse of the graph: backward twice without retain_graph, a tensor saved for backward modified in
/// place, in-place ops on leaves that require grad, NaN found by DetectAnomalyGuard, gradcheck failures.
struct AutogradError : Error { using Error::Error; };
/// An allocation failed after the caching allocator released its cache and retried; the message
/// gives the requested size and what tensorgrad holds.
struct OutOfMemoryError : Error { using Error::Error; };
/// An error reported by the CUDA runtime or by a kernel.
struct CudaError : Error { using Error::Error; };
/// A checkpoint that cannot be written or read, or does not match the module or optimizer it is loaded into.
struct SerializationError : Error { using Error::Error; };
/// A file or folder that cannot be opened or read (datasets).
struct IOError : Error { using Error::Error; };
/// Malformed data: a bad IDX file, samples that cannot be stacked into a batch.
struct DataError : Error { using Error::Error; };
struct CpuCapabilityError : Error { using Error::Error; };   // core/cpu_capability.h
/// A collective or a rendezvous of tg::distributed that failed: a rank that exited or never joined
/// (named in the message), a timeout, tensors that differ across ranks, a process group not initialized.
struct DistributedError : Error { using Error::Error; };

namespace detail {
inline void stream_all(std::ostringstream&) {}
template <class T, class... Rest>
void stream_all(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  stream_all(os, rest...);
}
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream os;
  stream_all(os, parts...);
  return os.str();
}
/// p as Python prints a float (in PyTorch's messages and module reprs): 2.0, 0.01, inf, nan.
inline std::string python_float(double p) {
  if (std::isnan(p)) return "nan";
  if (std::isinf(p)) return p > 0 ? "inf" : "-inf";
  char buf[40];
  for (int digits = 1; digits <= 17; ++digits) {   // the shortest form that reads back as p
    std::snprintf(buf, sizeof buf, "%.*g", digits, p);
    if (std::strtod(buf, nullptr) == p) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}
}  // namespace detail

}  // namespace tg

/// TG_CHECK(cond, ErrorType, message parts...): throws ErrorType(concatenated parts) when !cond.
#define TG_CHECK(cond, ErrorType, ...)                                  \
  do {                                                                  \
    if (!(cond)) throw ::tg::ErrorType(::tg::detail::cat(__VA_ARGS__)); \
  } while (0)
