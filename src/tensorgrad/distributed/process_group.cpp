// distributed/process_group.cpp: the default process group (init_process_group, destroy, the free
// collectives on Tensors) and the parsing of env://, tcp:// and file:// rendezvous. The backends are
// distributed/process_group_gloo.cpp (refused here in a build without Gloo, TENSORGRAD_WITH_GLOO=0)
// and distributed/process_group_nccl.cpp (refused here without CUDA, a GPU or libnccl.so.2).
#include <cstdlib>
#include <mutex>

#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/distributed/backends.h"
#include "tensorgrad/core/error.h"

#ifndef TENSORGRAD_WITH_GLOO
#define TENSORGRAD_WITH_GLOO 0
#endif
#ifndef TENSORGRAD_WITH_NCCL
#define TENSORGRAD_WITH_NCCL 0
#endif
#if TENSORGRAD_WITH_NCCL
#include "tensorgrad/backend/cuda/nccl.h"
#endif

namespace tg {
namespace distributed {

namespace {

std::mutex& group_mutex() {
  static std::mutex* m = new std::mutex;   // never destroyed: a static destructor may run after its users
  return *m;
}
std::unique_ptr<ProcessGroup>& group_slot() {
  static auto* g = new std::unique_ptr<ProcessGroup>;
  return *g;
}
int generation = 0;

int env_int(const char* name, int given, const char* what) {
  if (given >= 0) return given;
  const char* v = std::getenv(name);
  TG_CHECK(v != nullptr && *v != '\0', DistributedError, "init_process_group: ", name, " is not set (", what,
           "): set it, launch with tools/tgrun, or pass InitOptions().", name[0] == 'R' ? "rank" : "world_size", "(n)");
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  TG_CHECK(end != v && *end == '\0' && n >= 0 && n < (1 << 20), DistributedError, "init_process_group: ", name,
           "='", v, "' is not a non-negative integer");
  return static_cast<int>(n);
}

int parse_port(const std::string& s, const char* from) {
  char* end = nullptr;
  const long p = std::strtol(s.c_str(), &end, 10);
  TG_CHECK(!s.empty() && *end == '\0' && p >= 1 && p <= 65535, DistributedError, "init_process_group: ", from, "='",
           s, "' is not a port number in [1, 65535]");
  return static_cast<int>(p);
}

detail::Rendezvous parse(const InitOptions& o) {
  detail::Rendezvous r;
  r.timeout = o.timeout();
  TG_CHECK(r.timeout.count() > 0, DistributedError, "init_process_group: the timeout must be positive, got ",
           r.timeout.count(), " ms");
  r.world_size = env_int("WORLD_SIZE", o.world_size(), "the number of processes");
  r.rank = env_int("RANK", o.rank(), "this process's rank");
  TG_CHECK(r.world_size >= 1, DistributedError, "init_process_group: world_size must be at least 1, got ", r.world_size);
  TG_CHECK(r.rank < r.world_size, DistributedError, "init_process_group: rank ", r.rank,
           " is out of range for world_size ", r.world_size);
  const std::string& m = o.init_method();
  if (m == "env://") {
    const char* addr = std::getenv("MASTER_ADDR");
    const char* port = std::getenv("MASTER_PORT");
    TG_CHECK(addr != nullptr && *addr != '\0', DistributedError,
             "init_process_group: env:// needs MASTER_ADDR (the address of rank 0's machine) to be set");
    TG_CHECK(port != nullptr && *port != '\0', DistributedError,
             "init_process_group: env:// needs MASTER_PORT (a free port on rank 0's machine) to be set");
    r.host = addr;
    r.port = parse_port(port, "MASTER_PORT");
  } else if (m.rfind("tcp://", 0) == 0) {
    const std::string hp = m.substr(6);
    const auto colon = hp.rfind(':');
    TG_CHECK(colon != std::string::npos && colon > 0, DistributedError, "init_process_group: init_method '", m,
             "' is not tcp://host:port");
    r.host = hp.substr(0, colon);
    if (r.host.size() > 2 && r.host.front() == '[' && r.host.back() == ']') r.host = r.host.substr(1, r.host.size() - 2);
    r.port = parse_port(hp.substr(colon + 1), "the port of tcp://");
  } else if (m.rfind("file://", 0) == 0) {
    r.file = true;
    r.path = m.substr(7);
    TG_CHECK(!r.path.empty(), DistributedError, "init_process_group: init_method '", m, "' names no folder");
  } else {
    throw DistributedError("init_process_group: unknown init_method '" + m +
                           "': expected env://, tcp://host:port or file:///path/to/folder");
  }
  return r;
}

}  // namespace

bool is_available() noexcept { return TENSORGRAD_WITH_GLOO != 0 || TENSORGRAD_WITH_NCCL != 0; }

namespace {
/// Empty when backend 'nccl' can run here, else what is missing (Note [NCCL at run time], backend/cuda/nccl.cpp).
std::string nccl_missing() noexcept {
#if TENSORGRAD_WITH_NCCL
  return cuda::nccl::unavailable_reason();
#elif TENSORGRAD_WITH_CUDA
  return "a tensorgrad built without NCCL's header (nccl.h was not found next to the CUDA toolkit's headers)";
#else
  return "a tensorgrad built without CUDA (TENSORGRAD_CUDA=OFF)";
#endif
}
}  // namespace

bool is_backend_available(const std::string& backend) noexcept {
  if (backend == "gloo") return TENSORGRAD_WITH_GLOO != 0;
  if (backend == "nccl") return nccl_missing().empty();
  return false;
}

void init_process_group(const std::string& backend, const InitOptions& options) {
  std::lock_guard<std::mutex> lock(group_mutex());
  TG_CHECK(!group_slot(), DistributedError,
           "init_process_group: trying to initialize the default process group twice (call destroy_process_group first)");
  TG_CHECK(backend == "gloo" || backend == "nccl", DistributedError, "init_process_group: unknown backend '", backend,
           "': expected 'gloo' or 'nccl'");
  TG_CHECK(backend != "gloo" || TENSORGRAD_WITH_GLOO, DistributedError,
           "init_process_group: this tensorgrad was built without Gloo, so backend 'gloo' is unavailable: install "
           "libgloo-dev and rebuild with -DTENSORGRAD_DISTRIBUTED=AUTO or ON",
           TENSORGRAD_WITH_NCCL ? ", or use backend 'nccl' for CUDA tensors" : "");
  if (backend == "nccl") {
    const std::string missing = nccl_missing();
    TG_CHECK(missing.empty(), DistributedError, "init_process_group: backend 'nccl' needs a CUDA GPU and NCCL, "
             "and here there is ", missing,
             TENSORGRAD_WITH_GLOO ? "; use backend 'gloo', which also reduces CUDA tensors (staged through host memory)"
                                  : "");
  }
  detail::Rendezvous r = parse(options);
#if TENSORGRAD_WITH_NCCL
  if (backend == "nccl") {
    r.generation = generation;
    group_slot() = detail::make_nccl_group(r);
    ++generation;
    return;
  }
#endif
#if TENSORGRAD_WITH_GLOO
  r.generation = generation;
  group_slot() = detail::make_gloo_group(r);
  ++generation;
#else
  (void)r;   // unreachable: backend 'gloo' was refused above in a build without Gloo
  (void)generation;
  throw DistributedError("init_process_group: backend '" + backend + "' is not built into this tensorgrad");
#endif
}

bool is_initialized() noexcept {
  std::lock_guard<std::mutex> lock(group_mutex());
  return group_slot() != nullptr;
}

void destroy_process_group() {
  std::unique_ptr<ProcessGroup> g;
  {
    std::lock_guard<std::mutex> lock(group_mutex());
    g = std::move(group_slot());
  }
  g.reset();   // outside the lock: rank 0's store waits for the others to leave
}

ProcessGroup& default_group() {
  std::lock_guard<std::mutex> lock(group_mutex());
  TG_CHECK(group_slot() != nullptr, DistributedError,
           "Default process group has not been initialized, please make sure to call init_process_group.");
  return *group_slot();
}

int get_rank() { return default_group().rank(); }
int get_world_size() { return default_group().size(); }
std::string get_backend() { return default_group().backend(); }

namespace {
/// The Tensor's tensor as the collective writes it: the value itself, whose version is bumped.
RawTensor target(const Tensor& t, const char* op) {
  TG_CHECK(t.defined(), DistributedError, op, ": the tensor is undefined");
  if (t.data().storage()) t.data().storage()->bump_version();
  return t.data();
}
}  // namespace

void all_reduce(const Tensor& t, ReduceOp op) {
  RawTensor x = target(t, "all_reduce");
  default_group().all_reduce(x, op);
}

std::unique_ptr<Work> all_reduce(const Tensor& t, ReduceOp op, bool async_op) {
  RawTensor x = target(t, "all_reduce");
  if (!async_op) {
    default_group().all_reduce(x, op);
    return nullptr;
  }
  return default_group().all_reduce_async(x, op);
}

namespace {
/// The Work of a collective that finished before it was returned.
class DoneWork final : public Work {
 public:
  void wait() override {}
};
}  // namespace

std::unique_ptr<Work> ProcessGroup::all_reduce_async(RawTensor& t, ReduceOp op) {
  all_reduce(t, op);
  return std::make_unique<DoneWork>();
}

void broadcast(const Tensor& t, int src) {
  RawTensor x = target(t, "broadcast");
  default_group().broadcast(x, src);
}

void all_gather(std::vector<Tensor>& out, const Tensor& t) {
  TG_CHECK(t.defined(), DistributedError, "all_gather: the tensor is undefined");
  std::vector<RawTensor> parts;
  default_group().all_gather(parts, t.data());
  out.clear();
  for (RawTensor& p : parts) out.emplace_back(std::move(p), false);
}

void barrier() { default_group().barrier(); }

}  // namespace distributed
}  // namespace tg
