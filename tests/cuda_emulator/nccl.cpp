// tests/cuda_emulator/nccl.cpp: the CUDA emulator's NCCL, for a world of one rank: communicators bound
// to the device current at their creation, the non-blocking creation and finalization that answer
// ncclInProgress once (so the caller's polling runs), and all_reduce / broadcast / all_gather as copies queued on the
// stream (with one rank every reduction is the identity). Buffers must lie in device memory of the
// communicator's device and the stream must belong to it (what NCCL would fault on). Several ranks
// are refused with ncclInvalidUsage. With TG_CUDA_EMULATE_NCCL_STALL=1 (Note [Emulator settings]) a
// collective answers ncclInProgress and never completes, as one whose peer never arrives does on a
// non-blocking communicator. src/tensorgrad/backend/cuda/nccl.cpp points its table here.
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "emulator.h"
#include "nccl.h"

struct ncclComm {
  int device;
  ncclResult_t state;     // ncclInProgress until the first ncclCommGetAsyncError, then ncclSuccess
  bool stalled = false;   // a collective under TG_CUDA_EMULATE_NCCL_STALL=1: in progress for ever
};

namespace {

using Lock = std::lock_guard<std::recursive_mutex>;

std::set<const ncclComm*>& comms() {
  static auto* c = new std::set<const ncclComm*>();   // never destroyed, like the runtime's state
  return *c;
}

std::size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

/// Validates a collective's communicator, stream and buffers, then queues the copy of `bytes` from
/// send to recv (nothing when they are the same buffer).
ncclResult_t copy_collective(const char* name, const void* send, void* recv, std::size_t send_bytes,
                             std::size_t recv_bytes, ncclComm_t comm, cudaStream_t stream) {
  Lock lock(tg_emu::api_mutex());
  tg_emu::trace(std::string(name) + " " + std::to_string(send_bytes) + " bytes");
  if (comms().count(comm) == 0 || comm->state != ncclSuccess || comm->stalled) return ncclInvalidArgument;
  CUstream_st* s = tg_emu::stream_of(stream);
  if (s == nullptr || tg_emu::device_of(s) != comm->device) {
    tg_emu::report(std::string(name) + ": the stream does not belong to the communicator's cuda:" +
                   std::to_string(comm->device));
    return ncclInvalidArgument;
  }
  if (const char* v = std::getenv("TG_CUDA_EMULATE_NCCL_STALL"); v != nullptr && std::strcmp(v, "1") == 0) {
    comm->stalled = true;
    return ncclInProgress;
  }
  if (send_bytes == 0) return ncclSuccess;
  if (!tg_emu::in_device_memory(send, send_bytes, comm->device) || !tg_emu::in_device_memory(recv, recv_bytes, comm->device)) {
    tg_emu::report(std::string(name) + ": a buffer runs outside device memory of cuda:" + std::to_string(comm->device));
    return ncclInvalidArgument;
  }
  if (send != recv) tg_emu::submit(s, [send, recv, send_bytes] { std::memmove(recv, send, send_bytes); });
  return ncclSuccess;
}

}  // namespace

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = NCCL_MAJOR * 10000 + NCCL_MINOR * 100 + NCCL_PATCH;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (id == nullptr) return ncclInvalidArgument;
  std::memset(id->internal, 0, sizeof id->internal);
  std::strcpy(id->internal, "tensorgrad CUDA emulator");
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId, int rank, ncclConfig_t* config) {
  if (comm == nullptr || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  if (nranks != 1) {
    tg_emu::report("ncclCommInitRankConfig: the emulator's NCCL has one rank per communicator, asked for " +
                   std::to_string(nranks));
    return ncclInvalidUsage;
  }
  Lock lock(tg_emu::api_mutex());
  const bool blocking = config == nullptr || config->blocking != 0;
  auto* c = new ncclComm{tg_emu::current_device(), blocking ? ncclSuccess : ncclInProgress};
  comms().insert(c);
  *comm = c;
  return c->state;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  Lock lock(tg_emu::api_mutex());
  if (comms().count(comm) == 0 || async_error == nullptr) return ncclInvalidArgument;
  *async_error = comm->stalled ? ncclInProgress : comm->state;
  comm->state = ncclSuccess;   // creation completes once it has been asked about
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  Lock lock(tg_emu::api_mutex());
  if (comms().count(comm) == 0 || comm->stalled) return ncclInvalidArgument;
  comm->state = ncclInProgress;   // non-blocking: done once ncclCommGetAsyncError has been asked
  return ncclInProgress;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  Lock lock(tg_emu::api_mutex());
  if (comms().erase(comm) == 0) return ncclInvalidArgument;
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) { return ncclCommDestroy(comm); }

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unhandled error";
  }
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  if (type_size(type) == 0 || op < ncclSum || op >= ncclNumOps) return ncclInvalidArgument;
  const std::size_t bytes = count * type_size(type);
  return copy_collective("ncclAllReduce", send, recv, bytes, bytes, comm, stream);
}

ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  if (type_size(type) == 0 || root != 0) return ncclInvalidArgument;
  const std::size_t bytes = count * type_size(type);
  return copy_collective("ncclBroadcast", send, recv, bytes, bytes, comm, stream);
}

ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
  if (type_size(type) == 0) return ncclInvalidArgument;
  const std::size_t bytes = count * type_size(type);
  return copy_collective("ncclAllGather", send, recv, bytes, bytes, comm, stream);
}
