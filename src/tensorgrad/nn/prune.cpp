// nn/prune.cpp: torch.nn.utils.prune on tensorgrad modules. Masks are computed with device ops
// (topk over importance scores, index_add_ to clear entries), so parameters stay where they are; the
// one host read per call is the count of unpruned entries, which sizes the topk.
#include "tensorgrad/nn/prune.h"

#include <cmath>
#include <memory>
#include <sstream>

#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/creation.h"
#include "tensorgrad/ops/ops.h"

namespace tg {
namespace nn {
namespace utils {
namespace prune {

// Note [Pruning state]
// ~~~~~~~~~~~~~~~~~~~~
// PyTorch's layout, which makes a pruned model's state_dict keys PyTorch's: the first prune of
// module.<name> moves the parameter (the same leaf handle, so an optimizer built before keeps
// training it) to a slot the module holds (Module::hold) registered as "<name>_orig", registers the
// mask (of the parameter's dtype, 1 keeps, 0 prunes) as the buffer "<name>_mask", and unregisters
// "<name>", whose member (Linear::weight) becomes a plain attribute set to orig * mask: at once, and
// again before each forward by a forward pre-hook, so that gradients reach orig through the mask.
// The slots are kept in Module::extension("prune.<name>"). The hook, like PyTorch's pruning method
// objects, reads the state of the module it is called with, so that a copy made by clone() (and so
// a DataParallel replica) that holds the same hook computes its own weight from its own weight_orig
// and weight_mask; the gradient then reaches the original's weight_orig through the replica's
// link to it (Note [DataParallel replicas]). The clone step set under the same key gives the copy
// the same layout and state before clone() copies the values by name. Pruning again only replaces
// the mask by the composed one (PyTorch's PruningContainer: the new method sees the entries, or
// channels, still unpruned); remove() writes orig * mask into orig, registers it as "<name>" again,
// and drops the hook, the clone step and the rest.
namespace {

struct PruneState {
  Tensor* member = nullptr;   // the module's own slot of <name> (a plain attribute while pruned)
  Tensor* orig = nullptr;     // held: <name>_orig
  Tensor* mask = nullptr;     // held: <name>_mask
};

std::string key(const std::string& name) { return "prune." + name; }

std::shared_ptr<PruneState> state_of(Module& module, const std::string& name) {
  return std::static_pointer_cast<PruneState>(module.extension(key(name)));
}

/// The layout of a pruned <name> on module, whose parameter <name> is still registered: its slot
/// becomes the plain attribute; <name>_orig (the parameter's own handle when `keep_value`, so that
/// an optimizer built before keeps training it, else an empty slot that clone() fills) and <name>_mask
/// are held and registered. Returns the state, kept in module.extension("prune.<name>").
std::shared_ptr<PruneState> install(Module& module, const std::string& name, bool keep_value, const RawTensor& mask) {
  Tensor* slot = module.unregister(name);
  TG_CHECK(slot != nullptr, Error, "prune: module ", module.name(), " has no parameter named '", name, "'");
  const Tensor orig = keep_value ? *slot : Tensor();
  auto st = std::make_shared<PruneState>();
  st->member = slot;
  st->orig = &module.hold(orig);
  module.register_parameter(name + "_orig", *st->orig, orig.requires_grad());
  st->mask = &module.hold(mask.defined() ? Tensor(mask) : Tensor());
  module.register_buffer(name + "_mask", *st->mask);
  module.extension(key(name)) = st;
  return st;
}

/// The clone step of a pruned <name> (Module::set_clone_step): the copy gets the same layout, with
/// empty slots that clone() fills with copies of the original's weight_orig and weight_mask, and
/// then its plain attribute orig * mask (no graph: the hook records one at each forward).
Module::CloneStep clone_step(const std::string& name) {
  Module::CloneStep step;
  step.layout = [name](const Module&, Module& copy) { install(copy, name, /*keep_value=*/false, RawTensor()); };
  step.finish = [name](Module& copy) {
    if (auto st = state_of(copy, name)) *st->member = mul(*st->orig, *st->mask);
  };
  return step;
}

std::string module_text(const Module& module) { return module.name(); }

/// The tensor the importance is computed from (orig once pruned) and the current mask (ones before
/// the first prune).
void current(Module& module, const std::string& name, const char* op, RawTensor* orig, RawTensor* mask) {
  if (auto st = state_of(module, name)) {
    *orig = st->orig->data();
    *mask = st->mask->data();
    return;
  }
  for (const auto& p : module.named_parameters())
    if (p.first == name) {
      *orig = p.second.data();
      TG_CHECK(is_floating(orig->dtype()), DTypeError, op, ": parameter '", name, "' must be floating, got ",
               dtype_name(orig->dtype()));
      *mask = prim::full(orig->shape(), 1.0, orig->dtype(), orig->device());
      return;
    }
  throw Error(detail::cat(op, ": module ", module_text(module), " has no parameter named '", name, "'"));
}

/// Installs `mask` (the parameter's shape, the final composed mask) as module.<name>'s mask.
void apply(Module& module, const std::string& name, const RawTensor& mask) {
  std::shared_ptr<PruneState> st = state_of(module, name);
  if (!st) {   // the first prune of <name>: current() checked it is a parameter of this module
    st = install(module, name, /*keep_value=*/true, mask);
    module.register_extension_pre_hook(key(name), [name](Module& m, const Tensor&) {
      if (auto s = state_of(m, name)) *s->member = mul(*s->orig, *s->mask);   // <name> = orig * mask
      return Tensor();
    });
    module.set_clone_step(key(name), clone_step(name));
  } else {
    *st->mask = Tensor(mask);
  }
  *st->member = mul(*st->orig, *st->mask);
}

/// The mask after pruning k of the entries where mask is 1: those with the smallest score (largest
/// when `largest`). Scores of pruned entries are moved out of reach first.
RawTensor prune_entries(const RawTensor& scores, const RawTensor& mask, int64_t k, bool largest) {
  RawTensor flat_mask = mask.contiguous().reshape({mask.numel()}).clone();
  if (k == 0) return flat_mask.reshape(mask.shape());
  const RawTensor flat_scores = scores.contiguous().reshape({scores.numel()}).to(kFloat64);
  const double out_of_reach = largest ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  const RawTensor keep = prim::binary(BinaryOp::Eq, flat_mask, prim::scalar_like(1.0, flat_mask), "prune");
  const RawTensor ranked = prim::where(keep, flat_scores, prim::scalar_like(out_of_reach, flat_scores));
  const prim::Sorted chosen = prim::topk(ranked, k, 0, largest);
  const RawTensor minus = prim::full({k}, -1.0, flat_mask.dtype(), flat_mask.device());
  prim::index_add_(flat_mask, 0, chosen.indices, minus);              // 1 - 1 = 0 at the chosen entries
  return flat_mask.reshape(mask.shape());
}

int64_t count_unpruned(const RawTensor& mask) {
  const RawTensor ones = prim::binary(BinaryOp::Eq, mask, prim::scalar_like(1.0, mask), "prune");
  return Tensor(prim::sum(ones).to(Device::cpu())).item<int64_t>();
}

}  // namespace

int64_t Amount::of(int64_t n) const {
  if (is_count_) {
    TG_CHECK(count_ >= 0, Error, "prune: amount=", count_,
             " should either be a float in the range [0, 1] or a non-negative integer");
    TG_CHECK(count_ <= n, Error, "prune: amount=", count_, " should be smaller than the number of parameters to prune=", n);
    return count_;
  }
  TG_CHECK(fraction_ >= 0 && fraction_ <= 1, Error, "prune: amount=", fraction_,
           " should either be a float in the range [0, 1] or a non-negative integer");
  return static_cast<int64_t>(std::nearbyint(fraction_ * static_cast<double>(n)));   // Python's round: half to even
}

// The masks below are computed with prim:: ops, which record nothing; apply() records orig * mask.
void l1_unstructured(Module& module, const std::string& name, Amount amount) {
  RawTensor orig, mask;
  current(module, name, "l1_unstructured", &orig, &mask);
  const int64_t k = amount.of(count_unpruned(mask));
  apply(module, name, prune_entries(prim::unary(UnaryOp::Abs, orig), mask, k, /*largest=*/false));   // |w|
}

void random_unstructured(Module& module, const std::string& name, Amount amount) {
  RawTensor orig, mask;
  current(module, name, "random_unstructured", &orig, &mask);
  const int64_t k = amount.of(count_unpruned(mask));
  const RawTensor draws = rand(orig.shape(), TensorOptions().dtype(kFloat64).device(orig.device())).data();
  apply(module, name, prune_entries(draws, mask, k, /*largest=*/true));   // PyTorch: topk of rand_like
}

void ln_structured(Module& module, const std::string& name, Amount amount, double n, int64_t dim) {
  RawTensor orig, mask;
  current(module, name, "ln_structured", &orig, &mask);
  TG_CHECK(orig.dim() > 1, ShapeError, "ln_structured: structured pruning needs a tensor of at least 2 dims, got ",
           orig.dim());
  TG_CHECK(n > 0, Error, "ln_structured: n must be positive (or infinity), got ", n);
  dim = wrap_dim(dim, orig.dim(), "ln_structured");
  const int64_t C = orig.shape()[static_cast<std::size_t>(dim)];
  // rows (C, rest): channel c's entries, for the norm and for "still unpruned" (any mask entry != 0)
  auto rows = [dim, C](const RawTensor& t) { return t.transpose(0, dim).contiguous().reshape({C, -1}); };
  const RawTensor w = prim::unary(UnaryOp::Abs, rows(orig).to(kFloat64));
  RawTensor norm;
  if (std::isinf(n)) {
    norm = prim::reduce(ReduceOp::Max, w, {1}, false, "ln_structured");                  // max |w|
  } else {
    const RawTensor p = prim::unary(UnaryOp::PowScalar, w, {n, 0});
    norm = prim::unary(UnaryOp::PowScalar, prim::reduce(ReduceOp::Sum, p, {1}, false, "ln_structured"),
                       {1.0 / n, 0});                                                      // (sum |w|^n)^(1/n)
  }
  const RawTensor alive = prim::reduce(ReduceOp::Sum, prim::unary(UnaryOp::Abs, rows(mask)), {1}, false, "ln_structured");
  const RawTensor channel_mask = prim::to_device(
      prim::binary(BinaryOp::Ne, alive, prim::scalar_like(0.0, alive), "ln_structured").to(mask.dtype()), mask.device());
  const int64_t k = amount.of(count_unpruned(channel_mask));
  const RawTensor pruned = prune_entries(norm, channel_mask, k, /*largest=*/false);   // (C): 0 for pruned channels
  Shape s(static_cast<std::size_t>(orig.dim()), 1);
  s[static_cast<std::size_t>(dim)] = C;
  apply(module, name, prim::mul(mask, pruned.reshape(s)));   // earlier zeros stay (PyTorch: mask *= default_mask)
}

void custom_from_mask(Module& module, const std::string& name, const Tensor& mask) {
  RawTensor orig, old;
  current(module, name, "custom_from_mask", &orig, &old);
  TG_CHECK(mask.defined() && mask.shape() == orig.shape(), ShapeError, "custom_from_mask: the mask must have the "
           "parameter's shape ", shape_str(orig.shape()), ", got ", mask.defined() ? shape_str(mask.shape()) : "undefined");
  prim::check_same_device("custom_from_mask", orig, mask.data());
  apply(module, name, prim::mul(old, mask.data().to(old.dtype())));   // PyTorch: default_mask * mask
}

void global_unstructured(const std::vector<std::pair<Module*, std::string>>& parameters, Amount amount,
                         Method method) {
  TG_CHECK(!parameters.empty(), Error, "global_unstructured: parameters must not be empty");
  std::vector<RawTensor> scores, masks;
  for (const auto& p : parameters) {
    TG_CHECK(p.first != nullptr, Error, "global_unstructured: a null module for '", p.second, "'");
    RawTensor orig, mask;
    current(*p.first, p.second, "global_unstructured", &orig, &mask);
    // PyTorch's importance: getattr(module, name), the already pruned tensor
    const RawTensor value = state_of(*p.first, p.second) ? state_of(*p.first, p.second)->member->data() : orig;
    scores.push_back(value.contiguous().reshape({value.numel()}).to(kFloat64));
    masks.push_back(mask.contiguous().reshape({mask.numel()}).to(kFloat64));
  }
  const RawTensor all_masks = prim::cat(masks, 0);
  RawTensor all_scores = prim::cat(scores, 0);
  const int64_t k = amount.of(count_unpruned(all_masks));
  const bool l1 = method == Method::L1Unstructured;
  all_scores = l1 ? prim::unary(UnaryOp::Abs, all_scores)
                  : rand({all_scores.numel()}, TensorOptions().dtype(kFloat64).device(all_scores.device())).data();
  const RawTensor final_mask = prune_entries(all_scores, all_masks, k, /*largest=*/!l1);
  int64_t at = 0;
  for (const auto& p : parameters) {
    RawTensor orig, mask;
    current(*p.first, p.second, "global_unstructured", &orig, &mask);
    const RawTensor piece = final_mask.narrow(0, at, orig.numel()).reshape(orig.shape());
    at += orig.numel();
    custom_from_mask(*p.first, p.second, Tensor(piece));
  }
}

void remove(Module& module, const std::string& name) {
  std::shared_ptr<void>& ext = module.extension(key(name));
  TG_CHECK(ext != nullptr, Error, "remove: parameter '", name, "' of module ", module_text(module),
           " has to be pruned before pruning can be removed");
  std::shared_ptr<PruneState> st = std::static_pointer_cast<PruneState>(ext);
  {
    NoGradGuard no_grad;
    prim::copy_(st->orig->data(), prim::mul(st->orig->data(), st->mask->data()));   // orig.data = orig * mask
  }
  module.remove_extension_pre_hook(key(name));
  module.set_clone_step(key(name), Module::CloneStep());
  module.unregister(name + "_orig");
  module.unregister(name + "_mask");
  *st->member = *st->orig;                      // the original leaf handle, now holding the pruned values
  *st->orig = Tensor();
  *st->mask = Tensor();
  module.register_parameter(name, *st->member, st->member->requires_grad());
  ext.reset();
}

bool is_pruned(const Module& module) {
  const auto params = module.named_parameters();
  const auto buffers = module.named_buffers();
  for (const auto& b : buffers) {
    const std::string& n = b.first;
    if (n.size() <= 5 || n.compare(n.size() - 5, 5, "_mask") != 0) continue;
    const std::string orig = n.substr(0, n.size() - 5) + "_orig";
    for (const auto& p : params)
      if (p.first == orig) return true;
  }
  return false;
}

}  // namespace prune
}  // namespace utils
}  // namespace nn
}  // namespace tg
