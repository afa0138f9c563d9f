// engine/error.h: the error hierarchy every tensorgrad failure is reported through, and TG_CHECK.
// Nothing a user or a file controls may abort, assert or exit: it throws one of these instead.
// Messages name the op and the operands (DESIGN.md section 7); see engine/format.h for helpers.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace tg {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct ShapeError : Error { using Error::Error; };
struct IndexError : Error { using Error::Error; };
struct DTypeError : Error { using Error::Error; };
struct DeviceError : Error { using Error::Error; };
struct AutogradError : Error { using Error::Error; };
struct OutOfMemoryError : Error { using Error::Error; };
struct CudaError : Error { using Error::Error; };
struct SerializationError : Error { using Error::Error; };
struct IOError : Error { using Error::Error; };
struct DataError : Error { using Error::Error; };
struct CpuCapabilityError : Error { using Error::Error; };   // engine/cpu_capability.h

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
}  // namespace detail

}  // namespace tg

/// TG_CHECK(cond, ErrorType, message parts...): throws ErrorType(concatenated parts) when !cond.
#define TG_CHECK(cond, ErrorType, ...)                                  \
  do {                                                                  \
    if (!(cond)) throw ::tg::ErrorType(::tg::detail::cat(__VA_ARGS__)); \
  } while (0)
