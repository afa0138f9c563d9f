/// \file
/// data/internal.h: the check the datasets of data/ share. Not part of the data API: no header outside
/// data/ includes it.
/// \cond INTERNAL
#pragma once
#include <cstdint>

#include "tensorgrad/core/error.h"

namespace tg {
namespace data {
namespace detail {

/// IndexError naming `who` unless 0 <= index < size: a dataset's get of one sample. Index may be
/// signed (int64_t) or not (libtorch's size_t): a negative one converts to a value above any size.
template <class Index>
void check_index(Index index, int64_t size, const char* who) {
  TG_CHECK(size > 0 && static_cast<uint64_t>(index) < static_cast<uint64_t>(size), IndexError, who, ": index ", index,
           " is out of range for a dataset of ", size, " samples");
}

}  // namespace detail
}  // namespace data
}  // namespace tg
/// \endcond
