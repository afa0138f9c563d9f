// nn/conv.cpp: the constructors (PyTorch's reset_parameters) and printing of nn/conv.h's layers.
#include "tensorgrad/nn/conv.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "tensorgrad/prim/prim.h"
#include "tensorgrad/nn/init.h"

namespace tg {
namespace nn {

namespace {

/// {n} -> {n, n}; {h, w} as it is; ShapeError naming who otherwise.
std::vector<int64_t> two(const char* who, const char* what, const std::vector<int64_t>& v) {
  TG_CHECK(v.size() == 1 || v.size() == 2, ShapeError, who, ": ", what, " must have 1 or 2 elements, got ", v.size());
  return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : v;
}

/// "(3, 3)" as PyTorch prints a size tuple; "(3,)" for one element.
std::string tuple(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "(";
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  if (v.size() == 1) os << ",";
  os << ")";
  return os.str();
}

/// weight (out, in / groups, *kernel) and bias (out) as PyTorch's _ConvNd.reset_parameters draws them:
/// kaiming_uniform_(a = sqrt(5)), i.e. U(+-1/sqrt(fan_in)), for both. A transposed convolution's
/// weight is (in, out / groups, *kernel), its fan_in read from those dims the same way.
template <class Options>
void make_conv_parameters(Module& m, const char* who, int64_t in, int64_t out, const std::vector<int64_t>& kernel,
                          const Options& o, Tensor& weight, Tensor& bias, bool transposed = false) {
  TG_CHECK(in > 0 && out > 0, ShapeError, who, ": in_channels and out_channels must be positive, got ", in, " and ", out);
  TG_CHECK(o.groups_ > 0, ShapeError, who, ": groups must be a positive integer, got ", o.groups_);
  TG_CHECK(in % o.groups_ == 0, ShapeError, who, ": in_channels must be divisible by groups (", in, " and ", o.groups_, ")");
  TG_CHECK(out % o.groups_ == 0, ShapeError, who, ": out_channels must be divisible by groups (", out, " and ", o.groups_,
           ")");
  Shape shape = transposed ? Shape{in, out / o.groups_} : Shape{out, in / o.groups_};
  for (int64_t k : kernel) {
    TG_CHECK(k > 0, ShapeError, who, ": kernel_size must be positive, got ", tuple(kernel));
    shape.push_back(k);
  }
  weight = Tensor(prim::empty(shape));
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  m.register_parameter("weight", weight);
  if (o.bias_) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(init::fan_in_and_out(weight).first));
    bias = Tensor(prim::empty({out}));
    init::uniform_(bias, -bound, bound);
    m.register_parameter("bias", bias);
  }
}

/// The PyTorch extra_repr of a convolution: sizes always, padding/dilation/groups/bias when not default.
std::string conv_repr(const char* kind, int64_t in, int64_t out, const std::vector<int64_t>& k,
                      const std::vector<int64_t>& s, const std::vector<int64_t>& p, const std::vector<int64_t>& d,
                      int64_t groups, bool bias) {
  std::ostringstream os;
  os << kind << "(" << in << ", " << out << ", kernel_size=" << tuple(k) << ", stride=" << tuple(s);
  bool zero_pad = true, unit_dil = true;
  for (int64_t v : p) zero_pad = zero_pad && v == 0;
  for (int64_t v : d) unit_dil = unit_dil && v == 1;
  if (!zero_pad) os << ", padding=" << tuple(p);
  if (!unit_dil) os << ", dilation=" << tuple(d);
  if (groups != 1) os << ", groups=" << groups;
  if (!bias) os << ", bias=False";
  os << ")";
  return os.str();
}

/// A pooling size as PyTorch prints it: 2 for a single number, (2, 3) for a pair.
std::string size_arg(const std::vector<int64_t>& v) { return v.size() == 1 ? std::to_string(v[0]) : tuple(v); }

}  // namespace

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, const Conv2dOptions& options)
    : Conv2d(in_channels, out_channels, std::vector<int64_t>{kernel_size}, options) {}

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, const std::vector<int64_t>& kernel_size,
               const Conv2dOptions& options)
    : in_(in_channels), out_(out_channels), kernel_(two("Conv2d", "kernel_size", kernel_size)), options_(options) {
  options_.stride_ = two("Conv2d", "stride", options.stride_);
  options_.padding_ = two("Conv2d", "padding", options.padding_);
  options_.dilation_ = two("Conv2d", "dilation", options.dilation_);
  make_conv_parameters(*this, "Conv2d", in_, out_, kernel_, options_, weight, bias);
}

namespace {
/// options of libtorch's form, checked for the required arguments (Conv2dOptions(in, out, k)).
template <class Options>
const Options& with_sizes(const char* layer, const Options& options) {
  TG_CHECK(options.in_channels_ >= 0 && options.out_channels_ >= 0 && !options.kernel_size_.empty(), Error, layer,
           ": the options name no channels or kernel size; build them as ", layer, "Options(in_channels, "
           "out_channels, kernel_size), or pass those first: ", layer, "(in, out, kernel_size, options)");
  return options;
}
}  // namespace

Conv2d::Conv2d(const Conv2dOptions& options)
    : Conv2d(with_sizes("Conv2d", options).in_channels_, options.out_channels_, options.kernel_size_, options) {}

Tensor Conv2d::forward(const Tensor& x) {
  return conv2d(x, weight, bias, options_.stride_, options_.padding_, options_.dilation_, options_.groups_);
}

std::string Conv2d::name() const {
  return conv_repr("Conv2d", in_, out_, kernel_, options_.stride_, options_.padding_, options_.dilation_,
                   options_.groups_, bias.defined());
}

std::unique_ptr<Module> Conv2d::new_instance() const {
  return std::make_unique<Conv2d>(in_, out_, kernel_, options_);
}

ConvTranspose2d::ConvTranspose2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                                 const ConvTranspose2dOptions& options)
    : ConvTranspose2d(in_channels, out_channels, std::vector<int64_t>{kernel_size}, options) {}

ConvTranspose2d::ConvTranspose2d(int64_t in_channels, int64_t out_channels, const std::vector<int64_t>& kernel_size,
                                 const ConvTranspose2dOptions& options)
    : in_(in_channels), out_(out_channels), kernel_(two("ConvTranspose2d", "kernel_size", kernel_size)), options_(options) {
  options_.stride_ = two("ConvTranspose2d", "stride", options.stride_);
  options_.padding_ = two("ConvTranspose2d", "padding", options.padding_);
  options_.dilation_ = two("ConvTranspose2d", "dilation", options.dilation_);
  options_.output_padding_ = two("ConvTranspose2d", "output_padding", options.output_padding_);
  make_conv_parameters(*this, "ConvTranspose2d", in_, out_, kernel_, options_, weight, bias, /*transposed=*/true);
}

ConvTranspose2d::ConvTranspose2d(const ConvTranspose2dOptions& options)
    : ConvTranspose2d(with_sizes("ConvTranspose2d", options).in_channels_, options.out_channels_, options.kernel_size_,
                      options) {}

Tensor ConvTranspose2d::forward(const Tensor& x) {
  return conv_transpose2d(x, weight, bias, options_.stride_, options_.padding_, options_.output_padding_,
                          options_.groups_, options_.dilation_);
}

std::string ConvTranspose2d::name() const {
  std::string r = conv_repr("ConvTranspose2d", in_, out_, kernel_, options_.stride_, options_.padding_,
                            options_.dilation_, options_.groups_, bias.defined());
  bool zero = true;
  for (int64_t v : options_.output_padding_) zero = zero && v == 0;
  // PyTorch prints output_padding after dilation: insert it before ", groups", ", bias" or the ")"
  if (!zero) {
    std::size_t at = r.size() - 1;
    for (const char* next : {", groups=", ", bias="}) at = std::min(at, r.find(next));
    r.insert(at, ", output_padding=" + tuple(options_.output_padding_));
  }
  return r;
}

std::unique_ptr<Module> ConvTranspose2d::new_instance() const {
  return std::make_unique<ConvTranspose2d>(in_, out_, kernel_, options_);
}

Conv1d::Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, const Conv1dOptions& options)
    : in_(in_channels), out_(out_channels), kernel_(kernel_size), options_(options) {
  for (const auto* v : {&options.stride_, &options.padding_, &options.dilation_})
    TG_CHECK(v->size() == 1, ShapeError, "Conv1d: stride, padding and dilation must be single numbers, got ", tuple(*v));
  make_conv_parameters(*this, "Conv1d", in_, out_, {kernel_}, options_, weight, bias);
}

namespace {
/// The one kernel size of Conv1dOptions(in, out, k).
int64_t single_kernel(const Conv1dOptions& options) {
  TG_CHECK(with_sizes("Conv1d", options).kernel_size_.size() == 1, ShapeError,
           "Conv1d: kernel_size must be a single number, got ", tuple(options.kernel_size_));
  return options.kernel_size_[0];
}
}  // namespace

Conv1d::Conv1d(const Conv1dOptions& options)
    : Conv1d(options.in_channels_, options.out_channels_, single_kernel(options), options) {}

Tensor Conv1d::forward(const Tensor& x) {
  return conv1d(x, weight, bias, options_.stride_[0], options_.padding_[0], options_.dilation_[0], options_.groups_);
}

std::string Conv1d::name() const {
  return conv_repr("Conv1d", in_, out_, {kernel_}, options_.stride_, options_.padding_, options_.dilation_,
                   options_.groups_, bias.defined());
}

std::unique_ptr<Module> Conv1d::new_instance() const {
  return std::make_unique<Conv1d>(in_, out_, kernel_, options_);
}

MaxPool2d::MaxPool2d(int64_t kernel_size, int64_t stride, int64_t padding)
    : MaxPool2d(std::vector<int64_t>{kernel_size}, stride == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{stride},
                std::vector<int64_t>{padding}) {}

MaxPool2d::MaxPool2d(const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                     const std::vector<int64_t>& padding)
    : MaxPool2d(MaxPool2dOptions(kernel_size).stride(stride).padding(padding)) {}

MaxPool2d::MaxPool2d(const MaxPool2dOptions& options) : o_(options) {
  if (o_.stride_.empty()) o_.stride_ = o_.kernel_size_;
}

std::string MaxPool2d::name() const {
  std::ostringstream os;
  os << "MaxPool2d(kernel_size=" << size_arg(o_.kernel_size_) << ", stride=" << size_arg(o_.stride_)
     << ", padding=" << size_arg(o_.padding_);
  bool unit_dil = true;
  for (int64_t v : o_.dilation_) unit_dil = unit_dil && v == 1;
  if (!unit_dil) os << ", dilation=" << size_arg(o_.dilation_);
  if (o_.ceil_mode_) os << ", ceil_mode=True";
  os << ")";
  return os.str();
}

std::unique_ptr<Module> MaxPool2d::new_instance() const { return std::make_unique<MaxPool2d>(o_); }

AvgPool2d::AvgPool2d(int64_t kernel_size, int64_t stride, int64_t padding, bool count_include_pad)
    : AvgPool2d(std::vector<int64_t>{kernel_size}, stride == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{stride},
                std::vector<int64_t>{padding}, count_include_pad) {}

AvgPool2d::AvgPool2d(const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                     const std::vector<int64_t>& padding, bool count_include_pad)
    : AvgPool2d(AvgPool2dOptions(kernel_size).stride(stride).padding(padding).count_include_pad(count_include_pad)) {}

AvgPool2d::AvgPool2d(const AvgPool2dOptions& options) : o_(options) {
  if (o_.stride_.empty()) o_.stride_ = o_.kernel_size_;
}

std::string AvgPool2d::name() const {
  std::ostringstream os;
  os << "AvgPool2d(kernel_size=" << size_arg(o_.kernel_size_) << ", stride=" << size_arg(o_.stride_)
     << ", padding=" << size_arg(o_.padding_) << (o_.ceil_mode_ ? ", ceil_mode=True" : "")
     << (o_.count_include_pad_ ? "" : ", count_include_pad=False") << ")";
  return os.str();
}

std::unique_ptr<Module> AvgPool2d::new_instance() const { return std::make_unique<AvgPool2d>(o_); }

AdaptiveAvgPool2d::AdaptiveAvgPool2d(const std::vector<int64_t>& output_size)
    : output_size_(two("AdaptiveAvgPool2d", "output_size", output_size)) {}

std::string AdaptiveAvgPool2d::name() const { return "AdaptiveAvgPool2d(output_size=" + tuple(output_size_) + ")"; }

ConvTranspose1d::ConvTranspose1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                                 const ConvTranspose1dOptions& options)
    : in_(in_channels), out_(out_channels), kernel_(kernel_size), options_(options) {
  for (const auto* v : {&options.stride_, &options.padding_, &options.dilation_, &options.output_padding_})
    TG_CHECK(v->size() == 1, ShapeError,
             "ConvTranspose1d: stride, padding, output_padding and dilation must be single numbers, got ", tuple(*v));
  make_conv_parameters(*this, "ConvTranspose1d", in_, out_, {kernel_}, options_, weight, bias, /*transposed=*/true);
}

namespace {
/// The one kernel size of ConvTranspose1dOptions(in, out, k).
int64_t single_transposed_kernel(const ConvTranspose1dOptions& options) {
  TG_CHECK(with_sizes("ConvTranspose1d", options).kernel_size_.size() == 1, ShapeError,
           "ConvTranspose1d: kernel_size must be a single number, got ", tuple(options.kernel_size_));
  return options.kernel_size_[0];
}
}  // namespace

ConvTranspose1d::ConvTranspose1d(const ConvTranspose1dOptions& options)
    : ConvTranspose1d(options.in_channels_, options.out_channels_, single_transposed_kernel(options), options) {}

Tensor ConvTranspose1d::forward(const Tensor& x) {
  return conv_transpose1d(x, weight, bias, options_.stride_[0], options_.padding_[0], options_.output_padding_[0],
                          options_.groups_, options_.dilation_[0]);
}

std::string ConvTranspose1d::name() const {
  std::string r = conv_repr("ConvTranspose1d", in_, out_, {kernel_}, options_.stride_, options_.padding_,
                            options_.dilation_, options_.groups_, bias.defined());
  // PyTorch prints output_padding after dilation: insert it before ", groups", ", bias" or the ")"
  if (options_.output_padding_[0] != 0) {
    std::size_t at = r.size() - 1;
    for (const char* next : {", groups=", ", bias="}) at = std::min(at, r.find(next));
    r.insert(at, ", output_padding=" + tuple(options_.output_padding_));
  }
  return r;
}

std::unique_ptr<Module> ConvTranspose1d::new_instance() const {
  return std::make_unique<ConvTranspose1d>(in_, out_, kernel_, options_);
}

namespace {
/// ShapeError naming who unless each of sizes is empty or has one element (a 1-D pooling's options).
void check_single(const char* who, std::initializer_list<const std::vector<int64_t>*> sizes) {
  for (const auto* v : sizes)
    TG_CHECK(v->size() <= 1, ShapeError, who, ": kernel_size, stride, padding and dilation must be single numbers, got ",
             tuple(*v));
}
}  // namespace

MaxPool1d::MaxPool1d(const MaxPool1dOptions& options) : o_(options) {
  check_single("MaxPool1d", {&o_.kernel_size_, &o_.stride_, &o_.padding_, &o_.dilation_});
  TG_CHECK(o_.kernel_size_.size() == 1, ShapeError, "MaxPool1d: kernel_size must be a single number");
  if (o_.stride_.empty()) o_.stride_ = o_.kernel_size_;
}

std::string MaxPool1d::name() const {
  std::ostringstream os;
  os << "MaxPool1d(kernel_size=" << o_.kernel_size_[0] << ", stride=" << o_.stride_[0] << ", padding=" << o_.padding_[0]
     << ", dilation=" << o_.dilation_[0] << ", ceil_mode=" << (o_.ceil_mode_ ? "True" : "False") << ")";
  return os.str();
}

AvgPool1d::AvgPool1d(const AvgPool1dOptions& options) : o_(options) {
  check_single("AvgPool1d", {&o_.kernel_size_, &o_.stride_, &o_.padding_});
  TG_CHECK(o_.kernel_size_.size() == 1, ShapeError, "AvgPool1d: kernel_size must be a single number");
  if (o_.stride_.empty()) o_.stride_ = o_.kernel_size_;
}

std::string AvgPool1d::name() const {
  // AvgPool1d keeps its sizes as 1-tuples, and prints ceil_mode and count_include_pad never
  return "AvgPool1d(kernel_size=" + tuple(o_.kernel_size_) + ", stride=" + tuple(o_.stride_) +
         ", padding=" + tuple(o_.padding_) + ")";
}

AdaptiveMaxPool2d::AdaptiveMaxPool2d(const std::vector<int64_t>& output_size)
    : output_size_(two("AdaptiveMaxPool2d", "output_size", output_size)) {
  TG_CHECK(output_size_[0] > 0 && output_size_[1] > 0, ShapeError,
           "AdaptiveMaxPool2d: elements of output_size must be positive, got ", tuple(output_size_));
}

std::string AdaptiveMaxPool2d::name() const { return "AdaptiveMaxPool2d(output_size=" + tuple(output_size_) + ")"; }

AdaptiveAvgPool1d::AdaptiveAvgPool1d(int64_t output_size) : output_size_(output_size) {
  TG_CHECK(output_size > 0, ShapeError, "AdaptiveAvgPool1d: output_size must be positive, got ", output_size);
}

AdaptiveMaxPool1d::AdaptiveMaxPool1d(int64_t output_size) : output_size_(output_size) {
  TG_CHECK(output_size > 0, ShapeError, "AdaptiveMaxPool1d: output_size must be positive, got ", output_size);
}

namespace {
/// {n} -> {n, n, n}; {d, h, w} as it is; ShapeError naming who otherwise.
std::vector<int64_t> three(const char* who, const char* what, const std::vector<int64_t>& v) {
  TG_CHECK(v.size() == 1 || v.size() == 3, ShapeError, who, ": ", what, " must have 1 or 3 elements, got ", v.size());
  return v.size() == 1 ? std::vector<int64_t>{v[0], v[0], v[0]} : v;
}
}  // namespace

Conv3d::Conv3d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, const Conv3dOptions& options)
    : Conv3d(in_channels, out_channels, std::vector<int64_t>{kernel_size}, options) {}

Conv3d::Conv3d(int64_t in_channels, int64_t out_channels, const std::vector<int64_t>& kernel_size,
               const Conv3dOptions& options)
    : in_(in_channels), out_(out_channels), kernel_(three("Conv3d", "kernel_size", kernel_size)), options_(options) {
  options_.stride_ = three("Conv3d", "stride", options.stride_);
  options_.padding_ = three("Conv3d", "padding", options.padding_);
  options_.dilation_ = three("Conv3d", "dilation", options.dilation_);
  make_conv_parameters(*this, "Conv3d", in_, out_, kernel_, options_, weight, bias);
}

Conv3d::Conv3d(const Conv3dOptions& options)
    : Conv3d(with_sizes("Conv3d", options).in_channels_, options.out_channels_, options.kernel_size_, options) {}

Tensor Conv3d::forward(const Tensor& x) {
  return conv3d(x, weight, bias, options_.stride_, options_.padding_, options_.dilation_, options_.groups_);
}

std::string Conv3d::name() const {
  return conv_repr("Conv3d", in_, out_, kernel_, options_.stride_, options_.padding_, options_.dilation_,
                   options_.groups_, bias.defined());
}

std::unique_ptr<Module> Conv3d::new_instance() const { return std::make_unique<Conv3d>(in_, out_, kernel_, options_); }

ConvTranspose3d::ConvTranspose3d(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                                 const ConvTranspose3dOptions& options)
    : ConvTranspose3d(in_channels, out_channels, std::vector<int64_t>{kernel_size}, options) {}

ConvTranspose3d::ConvTranspose3d(int64_t in_channels, int64_t out_channels, const std::vector<int64_t>& kernel_size,
                                 const ConvTranspose3dOptions& options)
    : in_(in_channels), out_(out_channels), kernel_(three("ConvTranspose3d", "kernel_size", kernel_size)),
      options_(options) {
  options_.stride_ = three("ConvTranspose3d", "stride", options.stride_);
  options_.padding_ = three("ConvTranspose3d", "padding", options.padding_);
  options_.dilation_ = three("ConvTranspose3d", "dilation", options.dilation_);
  options_.output_padding_ = three("ConvTranspose3d", "output_padding", options.output_padding_);
  make_conv_parameters(*this, "ConvTranspose3d", in_, out_, kernel_, options_, weight, bias, /*transposed=*/true);
}

ConvTranspose3d::ConvTranspose3d(const ConvTranspose3dOptions& options)
    : ConvTranspose3d(with_sizes("ConvTranspose3d", options).in_channels_, options.out_channels_, options.kernel_size_,
                      options) {}

Tensor ConvTranspose3d::forward(const Tensor& x) {
  return conv_transpose3d(x, weight, bias, options_.stride_, options_.padding_, options_.output_padding_,
                          options_.groups_, options_.dilation_);
}

std::string ConvTranspose3d::name() const {
  std::string r = conv_repr("ConvTranspose3d", in_, out_, kernel_, options_.stride_, options_.padding_,
                            options_.dilation_, options_.groups_, bias.defined());
  bool zero = true;
  for (int64_t v : options_.output_padding_) zero = zero && v == 0;
  // PyTorch prints output_padding after dilation: insert it before ", groups", ", bias" or the ")"
  if (!zero) {
    std::size_t at = r.size() - 1;
    for (const char* next : {", groups=", ", bias="}) at = std::min(at, r.find(next));
    r.insert(at, ", output_padding=" + tuple(options_.output_padding_));
  }
  return r;
}

std::unique_ptr<Module> ConvTranspose3d::new_instance() const {
  return std::make_unique<ConvTranspose3d>(in_, out_, kernel_, options_);
}

namespace {
/// ShapeError naming who unless each of sizes is empty or has 1 or 3 elements (a 3-D pooling's options).
void check_three(const char* who, std::initializer_list<const std::vector<int64_t>*> sizes) {
  for (const auto* v : sizes)
    TG_CHECK(v->size() <= 1 || v->size() == 3, ShapeError, who,
             ": kernel_size, stride, padding and dilation must have 1 or 3 elements, got ", tuple(*v));
}
}  // namespace

MaxPool3d::MaxPool3d(const MaxPool3dOptions& options) : o_(options) {
  check_three("MaxPool3d", {&o_.kernel_size_, &o_.stride_, &o_.padding_, &o_.dilation_});
  TG_CHECK(!o_.kernel_size_.empty(), ShapeError, "MaxPool3d: kernel_size must have 1 or 3 elements, got none");
  if (o_.stride_.empty()) o_.stride_ = o_.kernel_size_;
}

std::string MaxPool3d::name() const {
  // PyTorch's _MaxPoolNd.extra_repr: every setting, each size as given (a number or a tuple)
  std::ostringstream os;
  os << "MaxPool3d(kernel_size=" << size_arg(o_.kernel_size_) << ", stride=" << size_arg(o_.stride_)
     << ", padding=" << size_arg(o_.padding_) << ", dilation=" << size_arg(o_.dilation_)
     << ", ceil_mode=" << (o_.ceil_mode_ ? "True" : "False") << ")";
  return os.str();
}

AvgPool3d::AvgPool3d(const AvgPool3dOptions& options) : o_(options) {
  check_three("AvgPool3d", {&o_.kernel_size_, &o_.stride_, &o_.padding_});
  TG_CHECK(!o_.kernel_size_.empty(), ShapeError, "AvgPool3d: kernel_size must have 1 or 3 elements, got none");
  if (o_.stride_.empty()) o_.stride_ = o_.kernel_size_;
}

std::string AvgPool3d::name() const {
  // PyTorch's AvgPool3d.extra_repr: kernel_size, stride and padding only, each as given
  return "AvgPool3d(kernel_size=" + size_arg(o_.kernel_size_) + ", stride=" + size_arg(o_.stride_) +
         ", padding=" + size_arg(o_.padding_) + ")";
}

namespace {
/// An adaptive 3-D pool's output_size, kept as given ({n} or {d, h, w}) for the repr; ShapeError naming
/// who for another count or a non-positive size.
std::vector<int64_t> adaptive_size3(const char* who, const std::vector<int64_t>& output_size) {
  TG_CHECK(output_size.size() == 1 || output_size.size() == 3, ShapeError, who,
           ": output_size must have 1 or 3 elements, got ", output_size.size());
  for (int64_t v : output_size)
    TG_CHECK(v > 0, ShapeError, who, ": elements of output_size must be positive, got ", tuple(output_size));
  return output_size;
}
}  // namespace

AdaptiveAvgPool3d::AdaptiveAvgPool3d(const std::vector<int64_t>& output_size)
    : output_size_(adaptive_size3("AdaptiveAvgPool3d", output_size)) {}

std::string AdaptiveAvgPool3d::name() const { return "AdaptiveAvgPool3d(output_size=" + size_arg(output_size_) + ")"; }

AdaptiveMaxPool3d::AdaptiveMaxPool3d(const std::vector<int64_t>& output_size)
    : output_size_(adaptive_size3("AdaptiveMaxPool3d", output_size)) {}

std::string AdaptiveMaxPool3d::name() const { return "AdaptiveMaxPool3d(output_size=" + size_arg(output_size_) + ")"; }

}  // namespace nn
}  // namespace tg
