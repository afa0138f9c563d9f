/// \file
/// autograd/tensor.h: Tensor (what users hold), its shared TensorImpl, graph Nodes and record().
/// The backward algorithm lives in autograd/engine.cpp; op rules live in ops/ (each op's methods on
/// Tensor are defined there too, in ops/methods.cpp); GradMode and guards in autograd/grad_mode.h.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/autograd/hooks.h"
#include "tensorgrad/core/indexing.h"
#include "tensorgrad/core/int_array_ref.h"
#include "tensorgrad/core/raw_tensor.h"

namespace tg {

struct Node;
struct RecordedNode;
class Tensor;
class ValuesWithIndices;

// Note [Tensor and RawTensor]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// tg::Tensor is the tensor users hold, as torch::Tensor is: a handle to a TensorImpl holding the
// value, requires_grad, the gradient and the Node that produced it. The value itself, without
// autograd, is a tg::RawTensor (core/raw_tensor.h): a strided view over a Storage, which tg::prim, the
// backends and the backward closures work on (closures capture RawTensors, never Tensors, so the
// graph holds no reference cycles: Note [Graph ownership]); Tensor::data() returns it. "Raw" names
// what is missing: no graph, no gradient. The user's type takes libtorch's name, where Variable was
// merged into Tensor, so that a libtorch program ports by renaming torch:: to tg::; tg::Variable
// stays an alias of tg::Tensor, so code written against it keeps compiling.

/// The name the user's tensor had before it took libtorch's (Note [Tensor and RawTensor]).
using Variable = Tensor;

/// State shared by every copy of a Tensor: copies are handles, as in PyTorch. set_data() (used by
/// Module::to) swaps the value for every holder, so an optimizer built earlier sees the move.
struct TensorImpl {
  /// The value.
  RawTensor data;
  /// Whether gradients flow to (and, for a leaf, accumulate in) this value.
  bool requires_grad = false;
  /// A non-leaf whose gradient backward keeps (Tensor::retain_grad).
  bool retains_grad = false;
  bool is_view = false;                    ///< a view of a Tensor that requires grad: no in-place ops on it
  std::shared_ptr<TensorImpl> grad;      ///< accumulated gradient (leaves, and non-leaves after retain_grad)
  std::shared_ptr<Node> grad_fn;           ///< producer; null for leaves
  /// A leaf's register_hook and post-accumulate hooks (a non-leaf's live on its grad_fn). See Note [Hook lists].
  detail::LazyHooks<detail::TensorHooks> hooks;
  debug::detail::Counted<debug::detail::kVariable> counted;   ///< counts live instances for tg::debug::live_counts()
};

namespace detail {
/// Guards every TensorImpl::grad slot: backward's accumulation, Tensor::grad(), set_grad() and
/// zero_grad() (Note [Gradient slots] in autograd/engine.cpp).
std::mutex& grad_mutex();
}  // namespace detail

/// Creation options, PyTorch style: TensorOptions().dtype(kFloat64).device(gpu).requires_grad(true).
/// Defaults: float32, cpu, no grad.
class TensorOptions {
 public:
  TensorOptions() = default;   ///< float32, cpu, no grad
  /// Options with this dtype: tg::zeros({3}, tg::kInt64), as PyTorch converts a dtype.
  TensorOptions(DType d) { dtype(d); }    // NOLINT(google-explicit-constructor)
  /// Options with this device: tg::zeros({3}, tg::Device::cuda(0)).
  TensorOptions(Device d) { device(d); }  // NOLINT(google-explicit-constructor)
  /// Options with a device of this type, as libtorch's: tg::empty(n, tg::kCPU).
  TensorOptions(DeviceType t) { device(Device(t)); }  // NOLINT(google-explicit-constructor)
  /// Sets the element type.
  TensorOptions& dtype(DType d) { dtype_ = d; has_dtype_ = true; return *this; }
  /// Sets the device.
  TensorOptions& device(Device d) { device_ = d; has_device_ = true; return *this; }
  /// Makes the result a leaf that requires grad (floating dtypes only).
  TensorOptions& requires_grad(bool r = true) { requires_grad_ = r; return *this; }
  /// The element type (float32 unless set).
  DType dtype() const { return dtype_; }
  bool has_dtype() const { return has_dtype_; }   ///< whether dtype() was set (arange, randint, randperm default to int64)
  /// The device (cpu unless set).
  Device device() const { return device_; }
  /// Whether the result requires grad (false unless set).
  bool requires_grad() const { return requires_grad_; }
  /// Whether device() was set (the *_like factories keep the model tensor's device otherwise).
  bool has_device() const { return has_device_; }
 private:
  DType dtype_ = kFloat32;
  bool has_dtype_ = false;
  Device device_;
  bool requires_grad_ = false;
  bool has_device_ = false;
};

/// TensorOptions().dtype(d), as libtorch's torch::dtype: tg::zeros({3}, tg::dtype(tg::kInt64).device(gpu)).
inline TensorOptions dtype(DType d) { return TensorOptions().dtype(d); }
/// TensorOptions().device(d), as libtorch's torch::device.
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
/// TensorOptions().requires_grad(r), as libtorch's torch::requires_grad.
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

/// What users hold: a RawTensor value with its autograd state (PyTorch's torch::Tensor). Copies are
/// handles to one shared TensorImpl, as in PyTorch. Ops on Tensors (ops/ops.h, the methods
/// below, the operators) record the graph that backward() walks when some input requires grad and
/// grad mode is on. A default-constructed Tensor is undefined: most members then throw tg::Error.
class Tensor {
 public:
  Tensor() = default;                                  ///< undefined
  Tensor(const Tensor&) = default;                     ///< another handle to the same tensor
  Tensor(Tensor&&) noexcept = default;                 ///< takes the handle; o is left undefined
  /// Makes this a handle to o's tensor (a named Tensor: `a = b` rebinds a, as in libtorch).
  Tensor& operator=(const Tensor& o) & = default;
  /// Takes o's handle (a named Tensor).
  Tensor& operator=(Tensor&& o) & noexcept = default;
  /// Writes src's values into a temporary view, as libtorch's: `x[0] = y` and `x.select(1, 2) = y` copy
  /// y into x (copy_, so src broadcasts and the in-place rules apply).
  Tensor& operator=(const Tensor& src) && { return copy_(src); }
  /// As above, from a temporary src.
  Tensor& operator=(Tensor&& src) && { return copy_(src); }
  /// Fills a temporary view with value, as libtorch's: `x[0] = 1` (fill_).
  Tensor& operator=(double value) && { return fill_(value); }
  /// Wraps data as a leaf; requires_grad needs a floating dtype (AutogradError).
  explicit Tensor(RawTensor data, bool requires_grad = false);
  /// A handle on an existing shared state (what record() and the engine build).
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  /// True when it holds a value (not default-constructed).
  bool defined() const { return impl_ != nullptr && impl_->data.defined(); }
  const RawTensor& data() const;                            ///< the value, without autograd
  void set_data(const RawTensor& t);                        ///< swaps the value for all copies (shape may change)
  /// The shared state (autograd internals; for custom ops and tools).
  const std::shared_ptr<TensorImpl>& impl() const { return impl_; }

  // ---- metadata
  /// The size of each dim.
  const Shape& shape() const { return data().shape(); }
  /// shape(), by libtorch's name: `std::cout << x.sizes()` prints "[2, 3]".
  const Shape& sizes() const { return data().shape(); }
  /// The step, in elements, between neighbours along each dim (RawTensor::strides).
  const Shape& strides() const { return data().strides(); }
  /// The size of dim d (negative d counts from the end); IndexError when out of range.
  int64_t size(int64_t d) const { return data().size(d); }
  /// The number of dims (0 for a scalar).
  int64_t dim() const { return data().dim(); }
  /// The number of elements.
  int64_t numel() const { return data().numel(); }
  /// The element type.
  DType dtype() const { return data().dtype(); }
  /// Where the value lives.
  Device device() const { return data().device(); }
  /// device().is_cuda().
  bool is_cuda() const { return device().is_cuda(); }
  /// Row-major without gaps (RawTensor::is_contiguous).
  bool is_contiguous() const { return data().is_contiguous(); }

  // ---- values
  /// The value of a one-element Tensor as double (PyTorch's item()); syncs with the device.
  /// ShapeError for more than one element.
  double item() const;
  /// The value read as T (any C++ type of the dtype table): `x.sum().item<float>()`. Exact for an int64
  /// Tensor read as int64_t, also beyond 2^53, where item() as double would round.
  template <class T> T item() const {
    if (numel() != 1) (void)item();   // the ShapeError of item()
    return to_vector<T>()[0];
  }
  /// All elements copied to the host in row-major order, converted to T (a C++ type of the dtype
  /// table: float, double, int64_t, int32_t, int8_t, uint8_t, bool, tg::Half, tg::BFloat16).
  template <class T> std::vector<T> to_vector() const;
  /// A copy on device, recorded in the graph (the gradient is copied back); this itself when already
  /// there. non_blocking: host-to-GPU copies from pinned memory (DataLoader pin_memory) are
  /// asynchronous. DeviceError when the device cannot be used.
  Tensor to(Device device, bool non_blocking = false) const;
  /// A converted copy, recorded in the graph for floating targets (int64 results carry no gradient);
  /// this itself when already of that dtype.
  Tensor to(DType dtype) const;
  /// to(Device::cuda()): to the current CUDA device (cuda::set_device), as PyTorch's .cuda().
  Tensor cuda() const { return to(Device::cuda()); }
  /// to(Device::cpu()).
  Tensor cpu() const { return to(Device::cpu()); }

  // ---- autograd
  /// Whether gradients flow to this Tensor (false when undefined).
  bool requires_grad() const { return impl_ && impl_->requires_grad; }
  /// Sets requires_grad on a leaf and returns *this (PyTorch's requires_grad_). Switching it off on a
  /// non-leaf, or on for an int64 value, throws AutogradError.
  Tensor& set_requires_grad(bool r);
  /// True when no recorded op produced it (users' tensors and parameters; undefined ones too).
  bool is_leaf() const { return !impl_ || !impl_->grad_fn; }
  /// The Node of the op that produced it; null for leaves.
  /// A RecordedNode is a Node with libtorch's name() ("MulBackward0"): `y.grad_fn()->name()`.
  std::shared_ptr<RecordedNode> grad_fn() const;
  Tensor grad() const;                                 ///< undefined until a backward reaches it
  /// Replaces the gradient (an undefined g clears it); ShapeError unless g has this shape.
  void set_grad(const Tensor& g);
  void zero_grad();                                      ///< sets grad to undefined (PyTorch set_to_none)
  /// Keeps .grad() of a non-leaf after backward (leaves always keep theirs). AutogradError unless it
  /// requires grad.
  void retain_grad();
  Tensor detach() const;                               ///< same storage, no graph
  /// Reverse-mode pass from this Tensor. grad: dL/dthis (required unless one element).
  /// The gradients of the leaves that require grad accumulate into their grad(). Without
  /// retain_graph the graph's saved tensors are freed as it goes, and a second backward through it
  /// throws AutogradError. Also AutogradError when this does not require grad.
  /// With create_graph the gradients get a graph of their own (they can be differentiated again);
  /// retain_graph defaults to create_graph, as in PyTorch. As there, a leaf's .grad with a graph
  /// usually leads back to the leaf (a reference cycle): clear it (zero_grad()) when done, or use
  /// autograd::grad, which returns the gradients instead of storing them.
  void backward(const Tensor& grad = Tensor(), std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;

  /// Registers a gradient hook (PyTorch's RawTensor.register_hook): backward calls hook(grad) with this
  /// Tensor's complete gradient, summed over all its uses, every time it computes one. hook returns
  /// void (it only looks) or a Tensor: a defined result replaces the gradient (same shape, dtype and
  /// device, else backward throws), an undefined one keeps it. On a non-leaf the hook runs before the
  /// gradient flows into grad_fn() (and before retain_grad() keeps it); it belongs to the grad_fn of the
  /// moment, so after an in-place op it sees the gradient of the value it was registered on. On a leaf
  /// it runs before the gradient accumulates into grad(). Hooks run in registration order, each seeing
  /// the previous one's result, on the thread that runs backward, with no lock held, under no-grad.
  /// AutogradError unless this requires grad. A hook that captures the Tensor it is registered on
  /// keeps it alive for good (a cycle through the hook list): use the argument. See Note [Hook order]
  /// in autograd/engine.cpp.
  /// \code
  /// auto h = w.register_hook([](const tg::Tensor& grad) { return grad * 2; });
  /// h.remove();
  /// \endcode
  template <class F>
  RemovableHandle register_hook(F&& hook) {
    using Hook = std::decay_t<F>;
    static_assert(std::is_invocable<Hook&, const Tensor&>::value,
                  "register_hook: the hook must be callable as hook(const tg::Tensor& grad)");
    using R = std::invoke_result_t<Hook&, const Tensor&>;
    if constexpr (std::is_void<R>::value) {
      return add_grad_hook([h = Hook(std::forward<F>(hook))](const Tensor& g) mutable {
        h(g);
        return Tensor();
      });
    } else {
      static_assert(std::is_convertible<R, Tensor>::value,
                    "register_hook: the hook must return void or a Tensor (the replacement gradient)");
      return add_grad_hook(detail::GradHook(std::forward<F>(hook)));
    }
  }
  /// Registers a hook that backward calls with this leaf right after its gradient has accumulated into
  /// grad() (PyTorch's register_post_accumulate_grad_hook), once per backward that reaches it; what
  /// DistributedDataParallel launches its all-reduce from. The hook gets the leaf as its argument
  /// (capturing it would keep it alive for good). AutogradError on a non-leaf or on a Tensor that
  /// does not require grad. See Note [Hook order] in autograd/engine.cpp.
  RemovableHandle register_post_accumulate_grad_hook(detail::PostAccumulateGradHook hook);

  // ---- ops as methods (defined in ops/methods.cpp; every one is also a free function in ops/ops.h)
  /// tg::add(*this, o)
  Tensor add(const Tensor& o) const;
  /// tg::add(*this, o, alpha): *this + alpha o
  Tensor add(const Tensor& o, double alpha) const;
  /// tg::sub(*this, o)
  Tensor sub(const Tensor& o) const;
  /// tg::sub(*this, o, alpha): *this - alpha o
  Tensor sub(const Tensor& o, double alpha) const;
  /// tg::mul(*this, o)
  Tensor mul(const Tensor& o) const;
  /// tg::div(*this, o)
  Tensor div(const Tensor& o) const;
  /// tg::pow(*this, o)
  Tensor pow(const Tensor& o) const;
  /// tg::pow(*this, exponent)
  Tensor pow(double exponent) const;
  /// tg::neg(*this)
  Tensor neg() const;
  /// tg::exp(*this)
  Tensor exp() const;
  /// tg::log(*this)
  Tensor log() const;
  /// tg::sqrt(*this)
  Tensor sqrt() const;
  /// tg::abs(*this)
  Tensor abs() const;
  /// tg::relu(*this)
  Tensor relu() const;
  /// tg::sigmoid(*this)
  Tensor sigmoid() const;
  /// tg::tanh(*this)
  Tensor tanh() const;
  /// tg::clamp(*this, min, max)
  Tensor clamp(double min, double max) const;
  /// tg::sum(*this): all elements
  Tensor sum() const;
  /// tg::sum(*this, dim, keepdim)
  Tensor sum(int64_t dim, bool keepdim = false) const;
  /// tg::sum_to_size(*this, shape)
  Tensor sum_to_size(const Shape& shape) const;
  /// tg::mean(*this): all elements
  Tensor mean() const;
  /// tg::mean(*this, dim, keepdim)
  Tensor mean(int64_t dim, bool keepdim = false) const;
  /// tg::max(*this): all elements
  Tensor max() const;
  /// tg::max(*this, dim, keepdim): the values, which are also a tuple (values, indices) as libtorch's
  /// Tensor::max(dim) returns: `auto [v, i] = x.max(1)`, `std::get<1>(x.max(1))`.
  ValuesWithIndices max(int64_t dim, bool keepdim = false) const;
  /// tg::min(*this): all elements
  Tensor min() const;
  /// tg::min(*this, dim, keepdim): the values, also the tuple (values, indices) (see max(dim)).
  ValuesWithIndices min(int64_t dim, bool keepdim = false) const;
  /// tg::argmax(*this): the flattened index
  Tensor argmax() const;
  /// tg::argmax(*this, dim, keepdim)
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  /// tg::matmul(*this, o)
  Tensor matmul(const Tensor& o) const;
  /// tg::mm(*this, o)
  Tensor mm(const Tensor& o) const;
  /// tg::bmm(*this, o)
  Tensor bmm(const Tensor& o) const;
  /// tg::dot(*this, o)
  Tensor dot(const Tensor& o) const;
  /// tg::outer(*this, o)
  Tensor outer(const Tensor& o) const;
  /// tg::reshape(*this, shape)
  Tensor reshape(const Shape& shape) const;
  /// tg::view(*this, shape)
  Tensor view(const Shape& shape) const;
  /// tg::transpose(*this, d0, d1)
  Tensor transpose(int64_t d0, int64_t d1) const;
  /// tg::t(*this)
  Tensor t() const;
  /// tg::permute(*this, dims)
  Tensor permute(const std::vector<int64_t>& dims) const;
  /// tg::squeeze(*this): every size-1 dim
  Tensor squeeze() const;
  /// tg::squeeze(*this, dim)
  Tensor squeeze(int64_t dim) const;
  /// tg::unsqueeze(*this, dim)
  Tensor unsqueeze(int64_t dim) const;
  /// tg::expand(*this, shape)
  Tensor expand(const Shape& shape) const;
  /// tg::contiguous(*this)
  Tensor contiguous() const;
  /// tg::index_select(*this, dim, index)
  Tensor index_select(int64_t dim, const Tensor& index) const;
  /// tg::gather(*this, dim, index)
  Tensor gather(int64_t dim, const Tensor& index) const;
  /// tg::softmax(*this, dim)
  Tensor softmax(int64_t dim) const;
  /// tg::log_softmax(*this, dim)
  Tensor log_softmax(int64_t dim) const;
  /// tg::gelu(*this, approximate): "none" or "tanh"
  Tensor gelu(const std::string& approximate = "none") const;
  /// tg::silu(*this)
  Tensor silu() const;
  /// tg::softplus(*this, beta, threshold)
  Tensor softplus(double beta = 1, double threshold = 20) const;
  /// tg::leaky_relu(*this, negative_slope)
  Tensor leaky_relu(double negative_slope = 0.01) const;
  /// tg::log_sigmoid(*this)
  Tensor log_sigmoid() const;
  /// tg::masked_fill(*this, mask, value)
  Tensor masked_fill(const Tensor& mask, double value) const;
  /// tg::masked_fill(*this, mask, value) with a 0-d value
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const;
  /// tg::tril(*this, diagonal)
  Tensor tril(int64_t diagonal = 0) const;
  /// tg::triu(*this, diagonal)
  Tensor triu(int64_t diagonal = 0) const;
  /// tg::narrow(*this, dim, start, length): a differentiable view
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  /// tg::select(*this, dim, index): a differentiable view
  Tensor select(int64_t dim, int64_t index) const;
  /// tg::index(*this, indices): x.index({tg::Slice(0, 4), 1}) is Python's x[0:4, 1], a differentiable view;
  /// with index Tensors anywhere in the list (x.index({mask}), x.index({tg::Slice(), idx}) for x[:, idx])
  /// a differentiable copy, with PyTorch's placement of the broadcast index dims
  Tensor index(const std::vector<TensorIndex>& indices) const;
  /// tg::index_put(*this, indices, values, accumulate): a copy with values written at indices
  Tensor index_put(const std::vector<TensorIndex>& indices, const Tensor& values, bool accumulate = false) const;
  /// tg::index_put(*this, indices, value, accumulate)
  Tensor index_put(const std::vector<TensorIndex>& indices, double value, bool accumulate = false) const;

  // ---- in place (ops/inplace.cpp). Version counters catch writes to tensors saved for backward.
  /// \name In-place ops
  /// Each returns *this. Under grad mode they refuse (AutogradError) a leaf that requires grad (wrap
  /// the update in NoGradGuard, as optimizers do) and a view of a Tensor that requires grad; on a
  /// non-leaf the op is recorded, as in PyTorch.
  ///@{

  /// *this += o, with o broadcast to this shape (not the other way: ShapeError).
  Tensor& add_(const Tensor& o);
  /// *this += alpha o (libtorch's add_(other, alpha)); alpha checked as tg::add's.
  Tensor& add_(const Tensor& o, double alpha);
  /// *this += s.
  Tensor& add_(double s);
  /// *this -= o, with o broadcast to this shape.
  Tensor& sub_(const Tensor& o);
  /// *this -= alpha o; alpha checked as tg::add's.
  Tensor& sub_(const Tensor& o, double alpha);
  /// *this -= s.
  Tensor& sub_(double s);
  /// *this *= o, with o broadcast to this shape.
  Tensor& mul_(const Tensor& o);
  /// *this *= s.
  Tensor& mul_(double s);
  /// Sets every element to 0.
  Tensor& zero_();
  /// Sets every element to value.
  Tensor& fill_(double value);
  /// Copies src's values into this (src broadcast to this shape; any dtype and device).
  Tensor& copy_(const Tensor& src);
  /// Python's x[indices] = values (libtorch's index_put_; x[:, idx] = v is index_put_({tg::Slice(), idx}, v)):
  /// tg::index_put's values written into this.
  Tensor& index_put_(const std::vector<TensorIndex>& indices, const Tensor& values, bool accumulate = false);
  /// x[indices] = value, value converted to this dtype.
  Tensor& index_put_(const std::vector<TensorIndex>& indices, double value, bool accumulate = false);
  ///@}

  /// The gradient slot itself, as libtorch's mutable_grad(): read it, assign it, or reset() it
  /// (`x.mutable_grad().reset()` drops the gradient, as x.set_grad(Tensor()) does).
  class GradSlot {
   public:
    /// The slot of t.
    explicit GradSlot(Tensor& t) : t_(t) {}
    /// Drops the gradient.
    void reset() { t_.set_grad(Tensor()); }
    /// Sets the gradient (Tensor::set_grad's checks).
    GradSlot& operator=(const Tensor& g) { t_.set_grad(g); return *this; }
    /// The gradient (undefined when there is none).
    operator Tensor() const { return t_.grad(); }   // NOLINT(google-explicit-constructor): reads as the Tensor&
    /// Whether there is a gradient.
    bool defined() const { return t_.grad().defined(); }

   private:
    Tensor& t_;
  };
  /// The gradient slot (libtorch's Tensor::mutable_grad).
  GradSlot mutable_grad() { return GradSlot(*this); }
  /// True when other has this shape and dtype and equal values (torch.equal).
  bool equal(const Tensor& other) const;
  /// |this - other| <= atol + rtol |other| everywhere, NaNs equal only with equal_nan (torch.allclose).
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;

  // ---- libtorch's spellings of the ops above (ops/methods.cpp), so that a libtorch program ports by
  // renaming torch:: to tg::. The comparison methods give bool Tensors, as the operators do.
  /// tg::eq(*this, o) (libtorch's Tensor::eq).
  Tensor eq(const Tensor& o) const;
  /// *this == s.
  Tensor eq(double s) const;
  /// tg::ne(*this, o).
  Tensor ne(const Tensor& o) const;
  /// *this != s.
  Tensor ne(double s) const;
  /// tg::gt(*this, o).
  Tensor gt(const Tensor& o) const;
  /// *this > s.
  Tensor gt(double s) const;
  /// tg::lt(*this, o).
  Tensor lt(const Tensor& o) const;
  /// *this < s.
  Tensor lt(double s) const;
  /// tg::ge(*this, o).
  Tensor ge(const Tensor& o) const;
  /// *this >= s.
  Tensor ge(double s) const;
  /// tg::le(*this, o).
  Tensor le(const Tensor& o) const;
  /// *this <= s.
  Tensor le(double s) const;
  /// select(0, i), libtorch's x[i]: a view without dim 0; x[i][j] chains. IndexError out of range.
  Tensor operator[](int64_t i) const;
  /// x[t] for a 0-d integer Tensor t: select(0, t.item()), as libtorch's (IndexError for another t).
  Tensor operator[](const Tensor& i) const;
  /// Fills with values uniform in [from, to) from the manual_seed stream (libtorch's uniform_).
  Tensor& uniform_(double from = 0, double to = 1);
  /// Fills with values from N(mean, std^2) from the manual_seed stream (libtorch's normal_).
  Tensor& normal_(double mean = 0, double std = 1);
  /// tg::zeros(size) with this dtype and device, unless options set them (libtorch's new_zeros).
  Tensor new_zeros(IntArrayRef size, const TensorOptions& options = {}) const;
  /// tg::ones(size) with this dtype and device, unless options set them.
  Tensor new_ones(IntArrayRef size, const TensorOptions& options = {}) const;
  /// tg::full(size, value) with this dtype and device, unless options set them.
  Tensor new_full(IntArrayRef size, double value, const TensorOptions& options = {}) const;
  /// tg::empty(size) with this dtype and device, unless options set them.
  Tensor new_empty(IntArrayRef size, const TensorOptions& options = {}) const;
  /// view(other.sizes()) (libtorch's view_as).
  Tensor view_as(const Tensor& other) const;
  /// expand(other.sizes()) (libtorch's expand_as).
  Tensor expand_as(const Tensor& other) const;
  /// reshape(other.sizes()) (libtorch's reshape_as).
  Tensor reshape_as(const Tensor& other) const;
  /// tg::clone(*this): a fresh contiguous copy, with the gradient passing through (libtorch's clone).
  Tensor clone() const;
  /// tg::flatten(*this, start_dim, end_dim) (libtorch's Tensor::flatten): `x.flatten(1)`.
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  /// The p-norm of all elements, 0-d (libtorch's Tensor::norm(p)): (sum |x|^p)^(1/p), differentiable;
  /// p = 2 is sqrt(sum x^2). Floating x (DTypeError otherwise), p > 0 (Error otherwise).
  Tensor norm(double p = 2) const;
  /// Whether every element is nonzero (true), 0-d bool (libtorch's Tensor::all); true when empty.
  Tensor all() const;
  /// Whether some element is nonzero (true), 0-d bool (libtorch's Tensor::any); false when empty.
  Tensor any() const;
  /// set_requires_grad(r), libtorch's spelling: `auto w = tg::randn({3}).requires_grad_();`.
  Tensor& requires_grad_(bool r = true) { return set_requires_grad(r); }

 private:
  RemovableHandle add_grad_hook(detail::GradHook hook);
  std::shared_ptr<TensorImpl> impl_;
};

/// Prints the value like PyTorch, with ", grad_fn=<op>" or ", requires_grad=true" when they apply.
std::ostream& operator<<(std::ostream& os, const Tensor& v);

/// What max(dim) and min(dim) return: the values as a Tensor (so `Tensor m = x.max(1)` and
/// `x.max(1).sizes()` read them), and also the tuple (values, indices) libtorch returns:
/// `auto [values, indices] = x.max(1)`, `std::get<1>(x.max(1))`, `std::tie(v, i) = x.max(1)`. values
/// carries the gradient; indices is int64 (argmax/argmin of the same dim) and needs none.
class ValuesWithIndices : public Tensor, public std::tuple<Tensor, Tensor> {
 public:
  /// values and their int64 indices along the reduced dim.
  ValuesWithIndices(Tensor values, Tensor indices)
      : Tensor(values), std::tuple<Tensor, Tensor>(std::move(values), std::move(indices)) {}
  /// The values (the Tensor this is).
  const Tensor& values() const { return std::get<0>(tuple()); }
  /// The int64 positions of the values along the reduced dim.
  const Tensor& indices() const { return std::get<1>(tuple()); }
  /// values() for I = 0, indices() for I = 1: what a structured binding reads.
  template <std::size_t I>
  const Tensor& get() const { return std::get<I>(static_cast<const std::tuple<Tensor, Tensor>&>(*this)); }
  /// The same, for a structured binding of a non-const result.
  template <std::size_t I>
  Tensor& get() { return std::get<I>(static_cast<std::tuple<Tensor, Tensor>&>(*this)); }
 private:
  const std::tuple<Tensor, Tensor>& tuple() const { return *this; }
};

// ------------------------------------------------------------------------------------------------
// The graph. See Note [Graph ownership].

/// One input of a recorded op, as backward sees it: where that input's gradient goes, and its shape.
///
/// Note [Graph ownership]
/// A Node is one recorded op. Its edges point at what each input needs for its gradient: the
/// producing Node for a non-leaf, the TensorImpl for a leaf that requires grad (so that backward can
/// accumulate into .grad), nothing otherwise. Edges never point at a non-leaf's data, and backward
/// closures capture RawTensors, never Tensors, so there are no reference cycles and an activation
/// lives only as long as a closure that needs it. Nodes are freed iteratively (autograd/engine.cpp,
/// Node::~Node), so a chain of a million ops neither overflows the stack in backward nor in teardown.
struct Edge {
  std::shared_ptr<Node> fn;                ///< producer of a non-leaf input
  std::shared_ptr<TensorImpl> leaf;      ///< a leaf input that requires grad
  Shape shape;                             ///< the input's shape: the engine sums gradients back to it
  DType dtype = kFloat32;                  ///< the input's dtype: the engine casts its gradient to it
  Device device;                           ///< the input's device: a gradient elsewhere is an error
  /// True when the input wants a gradient (fn or leaf is set).
  bool needs_grad() const { return fn != nullptr || leaf != nullptr; }
};

/// What a backward closure sees: which inputs want a gradient, and where to put it. G is RawTensor
/// for a first-order rule (Grads) and Tensor for a differentiable one (VarGrads).
template <class G>
class BasicGrads {
 public:
  /// n inputs, none needed yet, no gradients set (the engine fills in need()).
  explicit BasicGrads(std::size_t n) : needed_(n, false), values_(n) {}
  /// The number of inputs of the op.
  std::size_t size() const { return needed_.size(); }
  /// Whether input i wants a gradient; a rule may skip computing the others.
  bool need(std::size_t i) const { return needed_[i]; }
  /// Sets input i's gradient; it may have the broadcast shape: the engine sums it to the input's shape.
  void set(std::size_t i, G g) { values_[i] = std::move(g); }
  /// The need() flags, for the engine to set.
  SmallVector<bool, 4>& needed() { return needed_; }
  /// The gradients set so far (undefined: none), for the engine to read.
  SmallVector<G, 2>& values() { return values_; }
 private:
  SmallVector<bool, 4> needed_;
  SmallVector<G, 2> values_;   // undefined = no gradient
};
class SavedTensor;

/// What a first-order rule (void(const RawTensor& grad, Grads& out)) fills in. It offers VarGrads's
/// accessors on RawTensors, so that one generic rule, `[](const auto& grad, auto& g)`, can be
/// instantiated both ways (Note [Differentiable rules] in autograd/engine.cpp).
class Grads : public BasicGrads<RawTensor> {
 public:
  using BasicGrads<RawTensor>::BasicGrads;
  /// False: a first-order backward records nothing.
  static constexpr bool create_graph() { return false; }
  /// s, a saved input of the op.
  RawTensor input(std::size_t i, const SavedTensor& s) const;
  /// s, the op's saved output.
  RawTensor output(const SavedTensor& s) const;
  /// A view op's gradient for input i: zeros of in_shape with grad where view_of (a view of a tensor
  /// of in_shape) looks. The engine adds grad into that view of the input's running gradient sum when
  /// it owns one, instead of making the zeros (Note [View gradients] in autograd/engine.cpp).
  void set_view(std::size_t i, RawTensor grad, Shape in_shape, std::function<RawTensor(const RawTensor&)> view_of);
  /// A gradient set by set_view().
  struct ViewGrad {
    std::size_t input = 0;                               ///< the input it is for
    RawTensor grad;                                      ///< the view's gradient
    Shape in_shape;                                      ///< the input's shape
    std::function<RawTensor(const RawTensor&)> view_of;  ///< the view, applied to a tensor of in_shape
    /// zeros of in_shape with grad copied into the view.
    RawTensor materialize() const;
  };
  /// Input i's gradient if set_view() set it, else null.
  const ViewGrad* view(std::size_t i) const {
    for (const ViewGrad& v : views_)
      if (v.input == i) return &v;
    return nullptr;
  }
  /// Input i's gradient as one tensor (a view gradient materialized), undefined when none was set.
  RawTensor take(std::size_t i) {
    if (const ViewGrad* v = view(i)) return v->materialize();
    return std::move(values()[i]);
  }
 private:
  std::vector<ViewGrad> views_;   // empty unless a view op's rule set one
};

/// What a differentiable rule (void(const Tensor& grad, VarGrads& out), Note [Differentiable rules]
/// in autograd/engine.cpp) fills in: the gradients as Tensors, and the saved tensors back as Tensors.
/// Under create_graph, input() and output() carry the history of the value they saved, so that the
/// rule's Tensor ops record the gradient's own graph; otherwise they are plain values and nothing is
/// recorded.
class VarGrads : public BasicGrads<Tensor> {
 public:
  /// n inputs of node; create_graph says whether the rule's ops are recorded.
  VarGrads(std::size_t n, const std::shared_ptr<Node>* node, bool create_graph)
      : BasicGrads<Tensor>(n), node_(node), create_graph_(create_graph) {}
  /// Whether this backward records the gradient's graph (create_graph = true).
  bool create_graph() const { return create_graph_; }
  /// s, a saved copy of input i of the op, as a Tensor: with that input's history under create_graph.
  Tensor input(std::size_t i, const SavedTensor& s) const;
  /// s, the op's own saved output, as a Tensor: with this op as its grad_fn under create_graph.
  Tensor output(const SavedTensor& s) const;
  /// A Tensor that stands for input i in a recorded computation (create_graph only): the leaf itself,
  /// or a zero of the input's shape whose grad_fn is the input's producer; undefined when input i
  /// wants no gradient. For a rule that differentiates a recomputation (checkpoint) with
  /// autograd::grad, so that the gradients reach the op's inputs through their history.
  Tensor history(std::size_t i) const;
  /// A gradient that a rule computed without Tensor ops (a fused kernel with no differentiable
  /// formula): as it is without create_graph; under create_graph a Tensor whose Node raises
  /// AutogradError naming the op if a later backward reaches it.
  Tensor first_order_only(RawTensor value, const Tensor& grad) const;
 private:
  const std::shared_ptr<Node>* node_;
  bool create_graph_;
};

/// grad = dL/d(output), with the output's shape. Must capture RawTensors only, never Tensors.
/// record() takes any callable of this signature; BackwardFn is the type-erased one to store it in.
using BackwardFn = std::function<void(const RawTensor& grad, Grads& out)>;

/// A Node's handle on its backward rule, which lives inside the Node's own allocation (see
/// detail::NodeWith): calling it runs the rule; release() destroys the rule and what it captured.
/// A rule is first-order (RawTensors in and out) or differentiable (Tensors in and out).
class BackwardRule {
 public:
  BackwardRule() = default;
  BackwardRule(const BackwardRule&) = delete;
  BackwardRule& operator=(const BackwardRule&) = delete;
  explicit operator bool() const { return rule_ != nullptr; }   ///< false once released
  /// Whether the rule is written with Tensor ops (so its gradient can itself be differentiated).
  bool differentiable() const { return call_var_ != nullptr; }
  /// Whether the rule has a first-order form on RawTensors (a prim rule, or a generic one).
  bool first_order() const { return call_ != nullptr; }
  /// Runs a first-order rule; it must be bound and not released.
  void operator()(const RawTensor& grad, Grads& out) const { call_(rule_, grad, out); }
  /// Runs a differentiable rule; it must be bound and not released.
  void operator()(const Tensor& grad, VarGrads& out) const { call_var_(rule_, grad, out); }
  /// Points the handle at a first-order rule: call(rule, grad, out) runs it, destroy(rule) destroys it.
  void bind(void* rule, void (*call)(void*, const RawTensor&, Grads&), void (*destroy)(void*)) {
    rule_ = rule;
    call_ = call;
    destroy_ = destroy;
  }
  /// Points the handle at a differentiable rule.
  void bind(void* rule, void (*call)(void*, const Tensor&, VarGrads&), void (*destroy)(void*)) {
    rule_ = rule;
    call_var_ = call;
    destroy_ = destroy;
  }
  /// Destroys the rule and what it captured (saved tensors); a no-op when already released.
  void release() noexcept {
    if (rule_ != nullptr) destroy_(rule_);
    rule_ = nullptr;
  }
 private:
  void* rule_ = nullptr;
  void (*call_)(void*, const RawTensor&, Grads&) = nullptr;
  void (*call_var_)(void*, const Tensor&, VarGrads&) = nullptr;
  void (*destroy_)(void*) = nullptr;
};

/// One recorded op in the graph (PyTorch's torch::autograd::Node, what grad_fn() returns): its
/// name, its inputs' edges and its backward rule. Made by record(); see Note [Graph ownership].
struct Node {
  /// An empty node (record() fills it in).
  Node() = default;
  Node(const Node&) = delete;              // one owner of the rule and of the parent links
  Node& operator=(const Node&) = delete;
  const char* name = "";                   ///< "mul": errors, anomaly reports and graph dumps
  uint64_t sequence_nr = 0;                ///< creation order; backward runs the newest first
  SmallVector<Edge, 2> next;               ///< edge i <-> input i
  /// The output's shape, dtype and device.
  Shape out_shape;
  /// See out_shape.
  DType out_dtype = kFloat32;
  /// See out_shape.
  Device out_device;
  BackwardRule backward;                   ///< false once released (retain_graph = false)
  /// Who runs the rule right now: retaining runs (a count), one freeing run, or released. See
  /// Note [Concurrent backward] in autograd/engine.cpp.
  std::atomic<uint32_t> run_state{0};
  std::weak_ptr<TensorImpl> retained;    ///< the output, when it called retain_grad()
  /// The output's register_hook hooks (a non-leaf's hooks live here). See Note [Hook lists].
  detail::LazyHooks<detail::TensorHooks> hooks;
  debug::detail::Counted<debug::detail::kNode> counted;       ///< counts live nodes for tg::debug::live_counts()
  /// Frees the nodes only this one kept alive iteratively, so that long chains cannot overflow the stack.
  ~Node();                                 // see Note [Iterative graph teardown]
};

/// One input of an op, by reference: the {a, b} lists of record() and any_requires_grad() borrow
/// the Tensors (alive until the call returns, temporaries included) instead of copying their
/// handles, which would cost two atomic reference-count updates per input per op.
class InputRef {
 public:
  /// Borrows v; implicit, so that {a, b} works.
  InputRef(const Tensor& v) : v_(&v) {}   // NOLINT: implicit, so that {a, b} works
  /// The borrowed Tensor.
  const Tensor& get() const { return *v_; }
 private:
  const Tensor* v_;
};

/// The Node of a recorded op as grad_fn() shows it: every member of Node, and libtorch's name(), the
/// name PyTorch gives the op's backward ("MulBackward0", "AddmmBackward0"), which hides the op-name
/// field (Node::name, "mul"; a Node& sees the field as before). Every Node record() makes is one.
struct RecordedNode : Node {
  /// PyTorch's name of this op's backward node: CamelCase of the op and "Backward0", or the name of
  /// the kernel PyTorch runs where it differs (matmul: "MmBackward0", linear: "AddmmBackward0",
  /// cross_entropy: "NllLossBackward0", conv2d: "ConvolutionBackward0", ...). PyTorch's overload
  /// numbers are not followed (a sum over a dim is "SumBackward1" there, "SumBackward0" here).
  std::string name() const;
};

namespace detail {
/// A Node with its rule F stored inline: one allocation per recorded op. record() makes these with
/// make_shared, whose control block destroys the NodeWith (so ~Node need not be virtual).
template <class F>
struct NodeWith final : RecordedNode {
  explicit NodeWith(F&& f) : rule(std::move(f)) { bind(); }
  explicit NodeWith(const F& f) : rule(f) { bind(); }
  ~NodeWith() { backward.release(); }
  void bind() {   // a generic rule binds both forms: Note [Differentiable rules]
    auto destroy = [](void* r) { static_cast<std::optional<F>*>(r)->reset(); };
    if constexpr (std::is_invocable<F&, const RawTensor&, Grads&>::value)
      backward.bind(
          &rule, [](void* r, const RawTensor& grad, Grads& out) { (**static_cast<std::optional<F>*>(r))(grad, out); },
          destroy);
    if constexpr (std::is_invocable<F&, const Tensor&, VarGrads&>::value)
      backward.bind(
          &rule, [](void* r, const Tensor& grad, VarGrads& out) { (**static_cast<std::optional<F>*>(r))(grad, out); },
          destroy);
  }
  std::optional<F> rule;
};
/// Links a fresh Node to the inputs that require grad and returns the recorded output (variable.cpp).
Tensor attach_node(const char* name, RawTensor out, const InputRef* inputs, std::size_t n,
                   std::shared_ptr<RecordedNode> node);
/// Names the op in out's storage for OutOfMemoryError reports unless the storage is an input's (a
/// view). Inline: only storages of at least Storage::kReportedBytes are compared (Note [Live tensor report]).
inline void name_result(const char* name, const RawTensor& out, const InputRef* inputs, std::size_t n) noexcept {
  Storage* s = out.storage().get();
  if (s == nullptr || !s->tracked()) return;
  for (std::size_t i = 0; i < n; ++i) {
    const Tensor& in = inputs[i].get();
    if (in.defined() && in.data().storage().get() == s) return;
  }
  s->name_op(name);
}
}  // namespace detail

/// A tensor saved for backward, with the version it had when saved. get() throws AutogradError
/// (PyTorch's words) when an in-place op changed it since. See Note [Version counter].
///
/// Note [Version counter]
/// Each Storage counts the in-place writes to its bytes (every prim that writes in place bumps it).
/// Views and detach() share the Storage, so a write through any alias is seen. A SavedTensor records
/// the count when the forward saves it and checks it when the backward reads it.
class SavedTensor {
 public:
  /// Nothing saved: get() returns an undefined RawTensor.
  SavedTensor() = default;
  /// Saves an input of the op (its value and current version).
  SavedTensor(const Tensor& input);                        // NOLINT: an input of the op
  /// Saves the op's own output; op_name names it in the error message.
  SavedTensor(const RawTensor& output, const char* op_name);    // the op's own output
  /// The saved tensor; AutogradError when its storage was written in place since it was saved.
  /// Under saved-tensor hooks (autograd/saved_hooks.h) it is what the unpack hook returns.
  RawTensor get() const;
  /// Whether anything was saved.
  bool defined() const { return t_.defined() || packed_ != nullptr; }
 private:
  struct Packed;                                             // what saved-tensor hooks made of it
  void pack();
  RawTensor t_;                                                 // undefined once packed
  uint64_t version_ = 0;
  const char* producer_ = nullptr;                           // op whose output 0 this is; null for leaves
  std::shared_ptr<const Packed> packed_;
};

/// True when grad mode is on and some input requires grad: an op records a Node only then, and
/// saves tensors for its backward only then.
bool any_requires_grad(const InputRef* inputs, std::size_t n);
/// any_requires_grad() over a braced list: any_requires_grad({a, b}).
inline bool any_requires_grad(std::initializer_list<InputRef> inputs) {
  return any_requires_grad(inputs.begin(), inputs.size());
}
/// any_requires_grad() over a vector of inputs.
inline bool any_requires_grad(const std::vector<Tensor>& inputs) {
  const SmallVector<InputRef, 4> refs(inputs.begin(), inputs.end());
  return any_requires_grad(refs.data(), refs.size());
}

/// Wraps a forward result. Attaches a Node only if grad mode is on and some input requires grad;
/// otherwise returns a plain Tensor. This is also how users add their own differentiable ops.
/// backward: any callable as BackwardFn (a lambda, a BackwardFn); it is stored inside the Node.
/// name must outlive the graph (a string literal). Example (examples/03_custom_op.cpp):
/// \code
/// tg::SavedTensor x_saved(x);
/// return tg::record("softplus", y, {x}, [x_saved](const tg::RawTensor& grad, tg::Grads& g) {
///   g.set(0, tg::prim::mul(grad, tg::prim::unary(tg::UnaryOp::Sigmoid, x_saved.get())));
/// });
/// \endcode
template <class F>
Tensor record(const char* name, RawTensor out, const InputRef* inputs, std::size_t n, F&& backward) {
  using Rule = std::decay_t<F>;
  static_assert(std::is_invocable<Rule&, const RawTensor&, Grads&>::value ||
                    std::is_invocable<Rule&, const Tensor&, VarGrads&>::value,
                "record: the backward rule must be callable as void(const RawTensor& grad, Grads& out) "
                "or, differentiable, as void(const Tensor& grad, VarGrads& out)");
  detail::name_result(name, out, inputs, n);   // Note [Live tensor report]
  if (!any_requires_grad(inputs, n)) return Tensor(std::move(out));
  return detail::attach_node(name, std::move(out), inputs, n,
                             std::make_shared<detail::NodeWith<Rule>>(std::forward<F>(backward)));
}
/// record() over a braced list of inputs: record("op", out, {a, b}, rule).
template <class F>
Tensor record(const char* name, RawTensor out, std::initializer_list<InputRef> inputs, F&& backward) {
  return record(name, std::move(out), inputs.begin(), inputs.size(), std::forward<F>(backward));
}
/// record() over a vector of inputs (ops with a variable number of them, such as cat).
template <class F>
Tensor record(const char* name, RawTensor out, const std::vector<Tensor>& inputs, F&& backward) {
  const SmallVector<InputRef, 4> refs(inputs.begin(), inputs.end());
  return record(name, std::move(out), refs.data(), refs.size(), std::forward<F>(backward));
}
/// Marks `out` as a view of `base` (shares its storage) for the in-place rules.
Tensor mark_view(Tensor out, const Tensor& base);

namespace autograd {
/// The backward pass (autograd/engine.cpp) from several outputs at once (libtorch's
/// torch::autograd::backward): grads holds one gradient per root, or is empty when every root has
/// one element. Under create_graph the gradients that accumulate into .grad have a graph of their own.
void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph,
                  bool create_graph);
/// run_backward from one root (grad undefined: ones): Tensor::backward.
void run_backward(const Tensor& root, const Tensor& grad, bool retain_graph, bool create_graph = false);
/// libtorch's torch::autograd::backward(tensors, grad_tensors, retain_graph, create_graph): accumulates
/// the gradients of the sum of tensors (each weighted by its grad_tensors entry) into the leaves' .grad.
/// retain_graph defaults to create_graph.
void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);
/// libtorch's torch::autograd::grad: the gradients of outputs (weighted by grad_outputs, which may be
/// empty when every output has one element) with respect to inputs, returned instead of accumulated
/// into .grad. With create_graph they have a graph, so they can be differentiated again (Hessian-vector
/// products, gradient penalties, higher derivatives; Note [Differentiable rules] in autograd/engine.cpp).
/// retain_graph defaults to create_graph. AutogradError, in PyTorch's words, for an input that does not
/// require grad, for an input the outputs do not depend on (unless allow_unused: an undefined Tensor
/// comes back for it), for a non-scalar output without its grad_outputs entry, and for a graph already
/// freed by an earlier backward.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, std::optional<bool> retain_graph = std::nullopt,
                         bool create_graph = false, bool allow_unused = false);
}  // namespace autograd

namespace detail {
/// Where a partial backward delivers the gradients that leave its part of the graph.
///
/// Note [Partial backward]
/// tg::checkpoint (nn/checkpoint.cpp) backpropagates through a recomputed piece of graph that is
/// linked to the rest of the graph: to leaves (parameters, the fresh leaves standing for its
/// inputs) and to Nodes recorded before the recomputation began. run_backward_into runs only the
/// Nodes recorded from first_sequence_nr on; a gradient bound for a leaf or an older Node is summed
/// into `grads` under that leaf's TensorImpl* or that Node*. The recomputed Nodes are freed as they
/// run (no retain_graph); the rest of the graph is untouched.
///
/// A gradient for one of the leaves listed in `to_grad` (the parameters the part reads) goes straight
/// into that leaf's .grad as it arrives, as the backward that runs the caller's rule would put it
/// there: when that backward is a whole one (not autograd::grad, which leaves .grad alone; or a
/// partial one that does the same with this leaf) and the leaf has no gradient hooks. Collecting those
/// gradients instead would keep one gradient per parameter of the part alive until the part's backward
/// ends, which for a checkpointed segment of wide layers outweighs its activations. Every other
/// gradient is collected in `grads`, and nothing else is accumulated into .grad.
///
/// Under create_graph (run_backward_into with a Tensor seed) every gradient is collected, with its
/// graph, in `graph_grads`, and the part's Nodes are kept: the gradients' graph reads their saved
/// tensors.
struct GradientSink {
  uint64_t first_sequence_nr = 0;                       ///< Nodes older than this are outside the part
  std::vector<std::pair<const void*, RawTensor>> grads;    ///< collected: key (Node* or TensorImpl*), gradient
  std::vector<std::pair<const void*, Tensor>> graph_grads;   ///< the same, collected under create_graph
  std::vector<const void*> to_grad;   ///< TensorImpl* of the leaves that may go straight into .grad, sorted
  /// True for a Node recorded before the part began.
  bool outside(const Node& n) const;
  /// The gradient collected for key so far; null when none.
  RawTensor* find(const void* key);
  /// The gradient collected for key so far under create_graph; null when none.
  Tensor* find_graph(const void* key);
  /// Whether leaf's gradient goes straight into its .grad (see above); set by run_backward_into.
  bool straight_to_grad(const TensorImpl& leaf) const;
  const GradientSink* parent = nullptr;   ///< the sink of the partial backward whose rule started this one
  bool in_whole_backward = false;         ///< started by a rule of a whole backward (parent null)
};
/// data as a Tensor with the history of the input that edge e points at: that leaf itself, a non-leaf
/// whose grad_fn is e.fn, or a plain Tensor for an input that wants no gradient (Note [Differentiable rules]).
Tensor with_history(RawTensor data, const Edge& e);
/// value, a gradient node's first-order rule computed from grad, as a Tensor that depends on grad and
/// on node's inputs and refuses to be differentiated (Note [Differentiable rules]).
Tensor refusing_double_backward(const std::shared_ptr<Node>& node, const Tensor& grad, RawTensor value);
/// The sequence number the next recorded Node gets (Node::sequence_nr counts up from 0).
uint64_t next_sequence_nr();
/// Backward from the Node root with dL/d(its output) = seed, into sink. Takes the Node rather than
/// the output Tensor so that the caller can drop the output's value first. See Note [Partial backward].
void run_backward_into(std::shared_ptr<Node> root, RawTensor seed, GradientSink& sink);
/// The same under create_graph: every gradient is collected in sink.graph_grads with its graph, and the
/// part's graph is kept (the gradients' graph reads its saved tensors).
void run_backward_into(std::shared_ptr<Node> root, Tensor seed, GradientSink& sink);
/// After run_backward_into under create_graph, from the rule of a Node whose rule recomputed its
/// output from its inputs (g.input): sets each input's gradient to what was collected where its
/// history leads, once per edge (one tensor passed twice gets it once). Returns how many collected
/// gradients were delivered; fewer than sink.graph_grads.size() means the recomputation read a tensor
/// that requires grad which is not among the inputs.
std::size_t deliver_graph_grads(GradientSink& sink, VarGrads& g);
}  // namespace detail

}  // namespace tg

namespace std {
/// ValuesWithIndices is a pair for structured bindings: `auto [values, indices] = x.max(1)`.
template <>
struct tuple_size<tg::ValuesWithIndices> : std::integral_constant<std::size_t, 2> {};
/// Both elements are Tensors.
template <std::size_t I>
struct tuple_element<I, tg::ValuesWithIndices> {
  using type = tg::Tensor;   ///< values or indices
};
}  // namespace std
