/// \file
/// distributed/tcp_store.h: the key-value store of env:// rendezvous (PyTorch's c10d::TCPStore): rank 0
/// serves it on MASTER_PORT, every rank (rank 0 too) is a client. Plain POSIX sockets, no Gloo: the
/// group's store over it is in distributed/group_common.h. See Note [Rendezvous] in tcp_store.cpp.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tg {
namespace distributed {

/// A key-value store over TCP. The server side (is_master) listens on port (0 picks a free one, see
/// port()); every instance connects to host:port as a client, retrying until timeout. Every failure
/// is a DistributedError naming the store's address.
class TCPStore {
 public:
  /// Connects (and, when is_master, first serves) the store at host:port. rank is announced to the
  /// server so that departed_ranks() can name a client whose connection closed.
  TCPStore(const std::string& host, int port, bool is_master, int rank, std::chrono::milliseconds timeout);
  ~TCPStore();
  TCPStore(const TCPStore&) = delete;              ///< one connection per store
  TCPStore& operator=(const TCPStore&) = delete;   ///< one connection per store

  /// Sets key to value (any bytes), waking the ranks that wait for it.
  void set(const std::string& key, const std::string& value);
  /// key's value, waiting up to the timeout for it to be set.
  std::string get(const std::string& key);
  /// True when every key is set.
  bool check(const std::vector<std::string>& keys);
  /// Waits until every key is set; after timeout a DistributedError names the keys still missing.
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  /// Adds delta to the integer at key (0 when unset) and returns the sum.
  int64_t add(const std::string& key, int64_t delta);
  /// The ranks whose connection to the server closed without close() (their process exited or was
  /// killed), in increasing order. Throws when the server itself cannot be reached.
  std::vector<int> departed_ranks();
  /// Tells the server this rank leaves on purpose (not reported by departed_ranks), then disconnects.
  /// The server instance waits up to the timeout for its other clients to leave first.
  void close();
  /// The port the server listens on (the one picked when 0 was given).
  int port() const { return port_; }
  /// "host:port".
  std::string address() const;
  /// This client's own IP address on its connection to the server: the interface that reaches rank 0,
  /// where the other ranks can reach this one too.
  std::string local_address() const;

  struct Server;   ///< the serving half (tcp_store.cpp)

 private:
  std::string request(uint8_t cmd, const std::vector<std::string>& fields, std::chrono::milliseconds wait);

  std::string host_;
  int port_;
  std::chrono::milliseconds timeout_;
  int fd_ = -1;
  std::mutex mutex_;                 // one request at a time on the connection
  std::unique_ptr<Server> server_;   // rank 0 only
};

}  // namespace distributed
}  // namespace tg
