/// \file
/// core/torch_check.h: what libtorch programs use to check and to build messages, for programs ported
/// by renaming torch:: to tg::: TORCH_CHECK and AT_ASSERT (throwing tg::Error), and tg::str
/// (libtorch's torch::str / c10::str).
#pragma once
#include <string>

#include "tensorgrad/core/error.h"

namespace tg {

/// The arguments written one after another into a string, as libtorch's torch::str:
/// `tg::str("dcgan-sample-", 3, ".pt")` is "dcgan-sample-3.pt".
template <class... Args>
std::string str(const Args&... args) {
  return detail::cat(args...);
}

namespace detail {
/// The condition of TORCH_CHECK(cond, parts...), as bool.
template <class Cond, class... Parts>
bool torch_check_cond(const Cond& cond, const Parts&...) {
  return static_cast<bool>(cond);
}
/// The message of a failed TORCH_CHECK: the parts concatenated, or libtorch's words naming the
/// condition when there are none (text is the macro's arguments as written).
template <class Cond, class... Parts>
std::string torch_check_message(const char* text, const Cond&, const Parts&... parts) {
  if constexpr (sizeof...(Parts) == 0) return cat("Expected ", text, " to be true, but got false.");
  else return cat(parts...);
}
}  // namespace detail

}  // namespace tg

#ifndef TORCH_CHECK
/// libtorch's TORCH_CHECK(cond, message parts...): throws tg::Error with the parts concatenated (or
/// "Expected cond to be true, but got false." without any) when cond is false; cond is evaluated a
/// second time only on that path. Defined only where libtorch's own is not, so a file may include both.
#define TORCH_CHECK(...)                                                                               \
  do {                                                                                                 \
    if (!::tg::detail::torch_check_cond(__VA_ARGS__))                                                  \
      throw ::tg::Error(::tg::detail::torch_check_message(#__VA_ARGS__, __VA_ARGS__));                 \
  } while (0)
#endif
#ifndef AT_ASSERT
/// libtorch's AT_ASSERT(cond): an internal invariant; throws tg::Error naming the condition, the file
/// and the line when it is false. Defined only where libtorch's own is not.
#define AT_ASSERT(...)                                                                                 \
  do {                                                                                                 \
    if (!::tg::detail::torch_check_cond(__VA_ARGS__))                                                  \
      throw ::tg::Error(::tg::detail::cat("AT_ASSERT(", #__VA_ARGS__, ") failed at ", __FILE__, ":", __LINE__)); \
  } while (0)
#endif
