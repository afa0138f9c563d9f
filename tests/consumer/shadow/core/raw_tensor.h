// A consumer's own header with the same relative path as one of tensorgrad's: tensorgrad's headers
// must never pick it up (they include "tensorgrad/...").
#error "a consumer's core/raw_tensor.h was included in place of tensorgrad's"
