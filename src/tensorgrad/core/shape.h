/// \file
/// core/shape.h: Shape (sizes) and strides arithmetic, all int64 and overflow-checked, and SmallVector,
/// the inline-storage vector behind Shape (and behind the graph's edge and gradient lists, autograd/tensor.h).
/// Broadcasting rules (NumPy) live here too; the loops that use them are in the backends.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <new>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tg {

/// A vector of T that keeps its first N elements inside the object: std::vector's interface (the part
/// the engine uses), without a heap allocation up to N elements.
///
/// Note [Small vectors]
/// Every op builds a few shapes and strides, and every recorded op a few edges and gradients. With
/// std::vector each one would be a heap allocation (~30 per op forward + backward, most of the per-op
/// cost), so these containers keep their first N elements inside the object and go to the heap only
/// beyond N (a 7-d shape, a cat of 3 tensors). The interface is the part of std::vector the code
/// uses: iterators are plain pointers, element order and value semantics are the same, and it
/// converts to and from std::vector<T> implicitly so that code written against vectors keeps working.
template <class T, std::size_t N>
class SmallVector {
  static_assert(N > 0, "SmallVector needs inline room for at least one element");

 public:
  // The member types of std::vector; iterators are plain pointers.
  /// The element type.
  using value_type = T;
  /// Sizes and indices.
  using size_type = std::size_t;
  /// Iterator differences.
  using difference_type = std::ptrdiff_t;
  /// An element reference.
  using reference = T&;
  /// A const element reference.
  using const_reference = const T&;
  /// An element pointer.
  using pointer = T*;
  /// A const element pointer.
  using const_pointer = const T*;
  /// A plain pointer.
  using iterator = T*;
  /// A plain const pointer.
  using const_iterator = const T*;
  /// Walks from back to front.
  using reverse_iterator = std::reverse_iterator<iterator>;
  /// Walks from back to front, const.
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  /// Empty, with room for N elements inline.
  SmallVector() noexcept {
    if constexpr (kTrivial) std::memset(inline_, 0, sizeof inline_);   // see copy_inline
  }
  /// n value-initialized elements.
  explicit SmallVector(size_type n) : SmallVector() { resize(n); }
  /// n copies of value.
  SmallVector(size_type n, const T& value) : SmallVector() { assign(n, value); }
  /// The elements of [first, last).
  template <class It, class = std::enable_if_t<!std::is_integral<It>::value>>   // not (count, value)
  SmallVector(It first, It last) : SmallVector() { assign(first, last); }
  /// The listed elements: Shape{2, 3}.
  SmallVector(std::initializer_list<T> values) : SmallVector() { assign(values.begin(), values.end()); }
  /// A copy of a std::vector's elements; implicit, so that vectors pass where a Shape is expected.
  SmallVector(const std::vector<T>& values) : SmallVector() { assign(values.begin(), values.end()); }   // NOLINT
  /// A copy of o's elements.
  SmallVector(const SmallVector& o) : SmallVector() {
    if (kTrivial && !o.on_heap()) copy_inline(o);
    else assign(o.begin(), o.end());
  }
  /// Takes o's elements (its heap block, when it has one); o is left empty.
  SmallVector(SmallVector&& o) noexcept(std::is_nothrow_move_constructible<T>::value) : SmallVector() { take(o); }
  /// Destroys the elements and frees the heap block, if any.
  ~SmallVector() { free_all(); }

  /// Replaces the elements with copies of o's.
  SmallVector& operator=(const SmallVector& o) {
    if (this == &o) return *this;
    if (kTrivial && !on_heap() && !o.on_heap()) copy_inline(o);
    else assign(o.begin(), o.end());
    return *this;
  }
  /// Replaces the elements with o's (taking its heap block, when it has one); o is left empty.
  SmallVector& operator=(SmallVector&& o) noexcept(std::is_nothrow_move_constructible<T>::value) {
    if (this != &o) {
      free_all();
      size_ = 0;
      capacity_ = N;
      take(o);
    }
    return *this;
  }
  /// Replaces the elements with the listed ones.
  SmallVector& operator=(std::initializer_list<T> values) {
    assign(values.begin(), values.end());
    return *this;
  }
  /// A std::vector with the same elements; implicit, so that a Shape passes where a vector is expected.
  operator std::vector<T>() const { return std::vector<T>(begin(), end()); }   // NOLINT: implicit
  /// The elements as a std::vector, as libtorch's ArrayRef::vec(): `x.sizes().vec()`.
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }

  // ---- access: as the std::vector members of the same names; operator[], front() and back() do
  // not check bounds.
  /// The first element, inline or on the heap.
  T* data() noexcept { return on_heap() ? heap_ : reinterpret_cast<T*>(inline_); }
  /// The first element, inline or on the heap.
  const T* data() const noexcept { return on_heap() ? heap_ : reinterpret_cast<const T*>(inline_); }
  /// The number of elements.
  size_type size() const noexcept { return size_; }
  /// Elements that fit without growing (at least N).
  size_type capacity() const noexcept { return capacity_; }
  /// size() == 0.
  bool empty() const noexcept { return size_ == 0; }
  /// Element i (unchecked).
  T& operator[](size_type i) { return data()[i]; }
  /// Element i (unchecked).
  const T& operator[](size_type i) const { return data()[i]; }
  /// The first element (unchecked).
  T& front() { return data()[0]; }
  /// The first element (unchecked).
  const T& front() const { return data()[0]; }
  /// The last element (unchecked).
  T& back() { return data()[size_ - 1]; }
  /// The last element (unchecked).
  const T& back() const { return data()[size_ - 1]; }
  /// Points at the first element.
  iterator begin() noexcept { return data(); }
  /// Points past the last element.
  iterator end() noexcept { return data() + size_; }
  /// Points at the first element.
  const_iterator begin() const noexcept { return data(); }
  /// Points past the last element.
  const_iterator end() const noexcept { return data() + size_; }
  /// Points at the first element.
  const_iterator cbegin() const noexcept { return begin(); }
  /// Points past the last element.
  const_iterator cend() const noexcept { return end(); }
  /// Points at the last element, walking backwards.
  reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
  /// Points before the first element, walking backwards.
  reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
  /// Points at the last element, walking backwards.
  const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
  /// Points before the first element, walking backwards.
  const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }

  // ---- modifiers: as the std::vector members of the same names. Growing past the capacity moves the
  // elements (to the heap past N), which invalidates pointers and iterators; arguments that refer
  // to an element of this vector are safe.
  /// Makes room for n elements.
  void reserve(size_type n) {
    if (n > capacity_) grow_to(n);
  }
  /// Destroys every element; the capacity stays.
  void clear() noexcept {
    std::destroy(begin(), end());
    size_ = 0;
  }
  /// Appends T(args...) and returns it.
  template <class... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) {   // build first: args may refer to an element that growing moves
      T value(std::forward<Args>(args)...);
      grow_to(capacity_ * 2);
      ::new (static_cast<void*>(end())) T(std::move(value));
    } else {
      ::new (static_cast<void*>(end())) T(std::forward<Args>(args)...);
    }
    ++size_;
    return back();
  }
  /// Appends a copy of value.
  void push_back(const T& value) { emplace_back(value); }
  /// Appends value, moved.
  void push_back(T&& value) { emplace_back(std::move(value)); }
  /// Removes the last element (unchecked).
  void pop_back() {
    --size_;
    std::destroy_at(end());
  }
  /// n elements: removes from the end, or appends value-initialized ones.
  void resize(size_type n) { resize_with(n, [](void* p) { ::new (p) T(); }); }   // new elements value-initialized
  /// n elements: removes from the end, or appends copies of value.
  void resize(size_type n, const T& value) {
    if (n > size_ && n > capacity_) {   // value may be an element: copy it before growing
      const T copy(value);
      resize_with(n, [&copy](void* p) { ::new (p) T(copy); });
    } else {
      resize_with(n, [&value](void* p) { ::new (p) T(value); });
    }
  }
  /// Replaces the elements with n copies of value.
  void assign(size_type n, const T& value) {
    const T copy(value);
    clear();
    resize(n, copy);
  }
  /// Replaces the elements with those of [first, last).
  template <class It, class = std::enable_if_t<!std::is_integral<It>::value>>
  void assign(It first, It last) {
    clear();
    using Category = typename std::iterator_traits<It>::iterator_category;
    if constexpr (std::is_base_of<std::forward_iterator_tag, Category>::value)
      reserve(static_cast<size_type>(std::distance(first, last)));
    for (; first != last; ++first) emplace_back(*first);
  }
  /// Inserts a copy of value before pos; returns its position.
  iterator insert(const_iterator pos, const T& value) { return emplace(pos, value); }
  /// Inserts value, moved, before pos; returns its position.
  iterator insert(const_iterator pos, T&& value) { return emplace(pos, std::move(value)); }
  /// Inserts [first, last) before pos; returns the first one's position.
  template <class It, class = std::enable_if_t<!std::is_integral<It>::value>>
  iterator insert(const_iterator pos, It first, It last) {
    const difference_type at = pos - begin();
    const SmallVector values(first, last);   // the range may lie in this vector
    reserve(size_ + values.size());
    for (const T& v : values) emplace_back(v);
    std::rotate(begin() + at, end() - values.size(), end());
    return begin() + at;
  }
  /// Inserts T(args...) before pos; returns its position.
  template <class... Args>
  iterator emplace(const_iterator pos, Args&&... args) {
    const difference_type at = pos - begin();
    emplace_back(std::forward<Args>(args)...);
    std::rotate(begin() + at, end() - 1, end());
    return begin() + at;
  }
  /// Removes the element at pos; returns the position after it.
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  /// Removes [first, last); returns the position after them.
  iterator erase(const_iterator first, const_iterator last) {
    const difference_type at = first - begin(), n = last - first;
    std::move(begin() + at + n, end(), begin() + at);
    std::destroy(end() - n, end());
    size_ -= static_cast<uint32_t>(n);
    return begin() + at;
  }
  /// Exchanges the elements with o's.
  void swap(SmallVector& o) {
    SmallVector tmp(std::move(o));
    o = std::move(*this);
    *this = std::move(tmp);
  }

  // Hidden friends: found for a SmallVector on either side, and std::vector<T> converts to match.
  /// Same size and equal elements.
  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    if (a.size() != b.size()) return false;
    const T *p = a.data(), *q = b.data();
    for (size_type i = 0; i < a.size(); ++i)   // a plain loop: shapes are short, a memcmp call costs more
      if (!(p[i] == q[i])) return false;
    return true;
  }
  /// Not a == b.
  friend bool operator!=(const SmallVector& a, const SmallVector& b) { return !(a == b); }
  /// Lexicographical order of the elements (for use as a map key).
  friend bool operator<(const SmallVector& a, const SmallVector& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  // Elements that are plain bytes (int64 sizes) are copied as the whole fixed-size inline buffer:
  // a few vector moves, no loop and no memmove call. The constructors zero that buffer first (six
  // stores), so that the copy never reads uninitialized bytes.
  static constexpr bool kTrivial = std::is_trivially_copyable<T>::value;

  bool on_heap() const noexcept { return capacity_ > N; }
  void copy_inline(const SmallVector& o) noexcept {   // both inline, T trivially copyable
    std::memcpy(inline_, o.inline_, sizeof inline_);
    size_ = o.size_;
  }

  /// Moves into a heap block of capacity n (> capacity_).
  void grow_to(size_type n) {
    n = std::max<size_type>(n, N + 1);
    T* block = static_cast<T*>(::operator new(n * sizeof(T)));
    std::uninitialized_move(begin(), end(), block);
    std::destroy(begin(), end());
    if (on_heap()) ::operator delete(heap_);
    heap_ = block;
    capacity_ = static_cast<uint32_t>(n);
  }
  template <class Construct>
  void resize_with(size_type n, Construct construct) {
    if (n <= size_) {
      std::destroy(begin() + n, end());
    } else {
      reserve(n);
      for (T* p = end(); p != begin() + n; ++p) construct(static_cast<void*>(p));
    }
    size_ = static_cast<uint32_t>(n);
  }
  void free_all() noexcept {
    clear();
    if (on_heap()) ::operator delete(heap_);
  }
  /// Takes o's elements (this is empty and inline): steals a heap block, moves inline elements.
  void take(SmallVector& o) {
    if (o.on_heap()) {
      heap_ = o.heap_;
      capacity_ = o.capacity_;
      size_ = o.size_;
      o.capacity_ = N;
    } else if constexpr (kTrivial) {
      copy_inline(o);
    } else {
      std::uninitialized_move(o.begin(), o.end(), reinterpret_cast<T*>(inline_));
      size_ = o.size_;
      std::destroy(o.begin(), o.end());
    }
    o.size_ = 0;
  }

  union {
    alignas(T) unsigned char inline_[N * sizeof(T)];   ///< the first N elements
    T* heap_;                                          ///< all elements once capacity_ > N
  };
  uint32_t size_ = 0;
  uint32_t capacity_ = N;
};

/// Sizes or strides of a tensor: up to 6 dims inline (see Note [Small vectors]).
using Shape = SmallVector<int64_t, 6>;

std::string shape_str(const Shape& s);                       ///< "[2, 3]"
std::string shape_x(const Shape& s);                         ///< "2x3" (matmul messages)
/// Prints s as "[2, 3]", as libtorch prints sizes(): `std::cout << x.sizes()`.
std::ostream& operator<<(std::ostream& os, const Shape& s);
/// Element count; throws ShapeError on negative sizes or int64 overflow (before anything is allocated).
int64_t checked_numel(const Shape& s, const char* op = "tensor");
/// Element count of a shape already validated by checked_numel. A zero size wins before any product
/// is formed, so zero-size shapes with huge sizes elsewhere ({0, 2^62, 2^62}) never overflow.
inline int64_t numel_of(const Shape& s) {
  for (int64_t d : s)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
/// Row-major strides. For a zero-size shape whose strides would overflow int64 they saturate at
/// INT64_MAX: such a tensor has no element, so no stride is ever used to address one.
Shape contiguous_strides(const Shape& s);
/// Wraps a possibly negative dim into [0, rank); throws IndexError naming op otherwise. A 0-d tensor
/// (rank 0) accepts dims 0 and -1, as in PyTorch.
int64_t wrap_dim(int64_t dim, int64_t rank, const char* op);
/// NumPy broadcast of two shapes; throws ShapeError in PyTorch's words naming op.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace tg
