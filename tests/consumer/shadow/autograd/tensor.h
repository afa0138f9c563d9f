// A consumer's own header with the same relative path as one of tensorgrad's (or as one of its
// forwarding headers): tensorgrad's headers must never pick it up (they include "tensorgrad/...").
#error "a consumer's autograd/tensor.h was included in place of tensorgrad's"
