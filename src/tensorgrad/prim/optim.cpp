// prim/optim.cpp: the fused optimizer updates (kernels/optim.h): checks each parameter's tensors,
// groups the parameters by (device, dtype) in their order, one Backend::sgd_step / adam_step per group
// (on CUDA one launch updates a whole group), and bumps the version of every tensor updated in place,
// so autograd sees the write (Note [Version counter] in autograd/tensor.h).
#include "tensorgrad/prim/prim.h"

#include <vector>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/internal.h"

namespace tg {
namespace prim {

namespace {
/// Checks one tensor of a parameter's update against the parameter: defined (unless optional),
/// contiguous, of its shape, dtype and device.
void check_update_tensor(const char* op, const RawTensor& param, const RawTensor& t, const char* what, bool optional) {
  if (optional && !t.defined()) return;
  TG_CHECK(t.defined(), Error, op, ": the ", what, " is undefined");
  TG_CHECK(t.shape() == param.shape() && t.dtype() == param.dtype() && t.device() == param.device(), Error, op, ": the ",
           what, " ", tensor_meta_str(t), " on ", t.device(), " does not match its parameter ", tensor_meta_str(param),
           " on ", param.device());
  TG_CHECK(t.is_contiguous(), Error, op, ": the ", what, " must be contiguous");
}

/// The parameters of a fused step split by (device, dtype), each group in the parameters' order.
template <class Param>
std::vector<std::vector<Param>> by_device_and_dtype(const std::vector<Param>& params) {
  std::vector<std::vector<Param>> groups;
  for (const Param& p : params) {
    auto it = groups.begin();
    while (it != groups.end() &&
           (it->front().param.device() != p.param.device() || it->front().param.dtype() != p.param.dtype()))
      ++it;
    if (it == groups.end()) it = groups.insert(groups.end(), std::vector<Param>{});
    it->push_back(p);
  }
  return groups;
}
}  // namespace

void sgd_step(const std::vector<SgdParam>& params, const SgdHyper& hyper) {
  for (const SgdParam& p : params) {   // every check before any update: a step changes all or none
    check_defined("sgd_step", p.param);
    check_floating("sgd_step", p.param);
    check_update_tensor("sgd_step", p.param, p.grad, "gradient", false);
    check_update_tensor("sgd_step", p.param, p.velocity, "momentum buffer", hyper.momentum == 0);
    TG_CHECK(!p.lr_value.defined() || (p.lr_value.dtype() == kFloat64 && p.lr_value.numel() == 1 &&
                                       p.lr_value.device() == p.param.device()),
             Error, "sgd_step: the learning rate value must be one float64 on ", p.param.device(), ", got ",
             tensor_meta_str(p.lr_value), " on ", p.lr_value.device());
  }
  for (const std::vector<SgdParam>& group : by_device_and_dtype(params)) {
    backend_for(group.front().param.device()).sgd_step(group, hyper);
    for (const SgdParam& p : group) {
      p.param.storage()->bump_version();
      if (p.velocity.defined()) p.velocity.storage()->bump_version();
    }
  }
}

void adam_step(const std::vector<AdamParam>& params, const AdamHyper& hyper) {
  for (const AdamParam& p : params) {
    check_defined("adam_step", p.param);
    check_floating("adam_step", p.param);
    check_update_tensor("adam_step", p.param, p.grad, "gradient", false);
    check_update_tensor("adam_step", p.param, p.exp_avg, "exp_avg", false);
    check_update_tensor("adam_step", p.param, p.exp_avg_sq, "exp_avg_sq", false);
    check_update_tensor("adam_step", p.param, p.max_exp_avg_sq, "max_exp_avg_sq", true);
    TG_CHECK(!p.scalars.defined() || (p.scalars.dtype() == kFloat64 && p.scalars.numel() == 3 &&
                                      p.scalars.is_contiguous() && p.scalars.device() == p.param.device()),
             Error, "adam_step: the step values must be 3 contiguous float64 on ", p.param.device(), ", got ",
             tensor_meta_str(p.scalars), " on ", p.scalars.device());
  }
  for (const std::vector<AdamParam>& group : by_device_and_dtype(params)) {
    backend_for(group.front().param.device()).adam_step(group, hyper);
    for (const AdamParam& p : group)
      for (const RawTensor* t : {&p.param, &p.exp_avg, &p.exp_avg_sq, &p.max_exp_avg_sq})
        if (t->defined()) t->storage()->bump_version();
  }
}

}  // namespace prim
}  // namespace tg
