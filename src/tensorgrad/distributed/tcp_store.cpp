// distributed/tcp_store.cpp: TCPStore, the key-value store of env:// rendezvous: the server (a thread
// per client, rank 0's process) and the client requests. No Gloo here; the group's store
// (distributed/group_common.cpp) wraps it for the Gloo and NCCL backends and uses departed_ranks() to
// name a rank that died.
#include "tensorgrad/distributed/tcp_store.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <set>
#include <system_error>
#include <thread>

#include "tensorgrad/core/error.h"

namespace tg {
namespace distributed {

// Note [Rendezvous]
// ~~~~~~~~~~~~~~~~~
// Gloo connects its ranks through a gloo::rendezvous::Store: each rank publishes the addresses of its
// listening sockets under its rank and reads everyone else's. Debian's Gloo has a FileStore (one
// machine or a shared file system: file://), a HashStore (one process) and a RedisStore, but no TCP
// store. For env:// we serve our own small store from rank 0, as PyTorch's c10d::TCPStore does, rather
// than asking users to run redis-server: MASTER_ADDR:MASTER_PORT is then all a launcher must agree on,
// which is what torchrun and tools/tgrun set. The store also answers "which rank left": every client
// announces its rank (HELLO) on its one connection, and a connection that closes without BYE means its
// process exited or was killed, which the kernel reports at once. The group's store asks that when a
// collective fails, to name the rank (file:// answers it with per-rank lock files instead). The store
// is only for rendezvous (Gloo's addresses, NCCL's unique id) and diagnosis: tensors go through
// Gloo's own TCP pairs or NCCL.
//
// Wire format, both directions: a status or command byte, a field count (u32), then each field as a
// u32 length and its bytes. Integers travel as decimal text.

namespace {

enum Cmd : uint8_t { kHello = 1, kSet, kGet, kCheck, kWait, kAdd, kDeparted, kBye };

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& what) { throw DistributedError(what); }

/// Sends all of buf; false when the peer is gone.
bool send_all(int fd, const void* buf, std::size_t n) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

/// Receives exactly n bytes before deadline: 1 done, 0 the peer closed, -1 timed out or failed.
int recv_all(int fd, void* buf, std::size_t n, Clock::time_point deadline) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return -1;
    pollfd pfd{fd, POLLIN, 0};
    const int r = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) return -1;
    const ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k == 0) return 0;
    if (k < 0) return errno == ECONNRESET ? 0 : -1;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return 1;
}

bool send_message(int fd, uint8_t tag, const std::vector<std::string>& fields) {
  std::string buf(1, static_cast<char>(tag));
  auto put32 = [&](uint32_t v) { buf.append(reinterpret_cast<const char*>(&v), 4); };
  put32(static_cast<uint32_t>(fields.size()));
  for (const auto& f : fields) {
    put32(static_cast<uint32_t>(f.size()));
    buf += f;
  }
  return send_all(fd, buf.data(), buf.size());
}

/// 1 with tag and fields read, 0 the peer closed, -1 timed out.
int recv_message(int fd, uint8_t& tag, std::vector<std::string>& fields, Clock::time_point deadline) {
  char head[5];
  int r = recv_all(fd, head, 5, deadline);
  if (r != 1) return r;
  tag = static_cast<uint8_t>(head[0]);
  uint32_t n;
  std::memcpy(&n, head + 1, 4);
  if (n > (1u << 20)) return 0;   // not our protocol: treat as a broken peer
  fields.assign(n, std::string());
  for (auto& f : fields) {
    uint32_t len;
    if ((r = recv_all(fd, &len, 4, deadline)) != 1) return r;
    if (len > (1u << 30)) return 0;
    f.resize(len);
    if (len > 0 && (r = recv_all(fd, &f[0], len, deadline)) != 1) return r;
  }
  return 1;
}

const Clock::time_point kForever = Clock::time_point::max();

}  // namespace

struct TCPStore::Server {
  int listen_fd = -1;
  int port = 0;
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::string, std::string> data;
  std::set<int> departed;   // announced ranks whose connection closed without BYE
  int connected = 0;        // open client connections
  bool stopping = false;
  struct Client {
    int fd;
    std::thread thread;
  };
  std::vector<std::unique_ptr<Client>> clients;
  std::thread acceptor;

  void serve(int fd) {
    int rank = -1;
    bool bye = false;
    for (;;) {
      uint8_t cmd = 0;
      std::vector<std::string> f;
      if (recv_message(fd, cmd, f, kForever) != 1) break;
      std::unique_lock<std::mutex> lock(mutex);
      uint8_t status = 1;
      std::vector<std::string> out;
      if (cmd == kHello && f.size() == 1) {
        rank = std::atoi(f[0].c_str());
      } else if (cmd == kSet && f.size() == 2) {
        data[f[0]] = f[1];
        changed.notify_all();
      } else if (cmd == kGet && f.size() == 1) {
        auto it = data.find(f[0]);
        status = it != data.end();
        if (status) out.push_back(it->second);
      } else if (cmd == kCheck) {
        for (const auto& k : f) status &= data.count(k) ? 1 : 0;
      } else if (cmd == kWait && !f.empty()) {
        const auto deadline = Clock::now() + std::chrono::milliseconds(std::atoll(f[0].c_str()));
        auto missing = [&] {
          std::vector<std::string> m;
          for (std::size_t i = 1; i < f.size(); ++i)
            if (!data.count(f[i])) m.push_back(f[i]);
          return m;
        };
        changed.wait_until(lock, deadline, [&] { return stopping || missing().empty(); });
        out = missing();
        status = out.empty();
      } else if (cmd == kAdd && f.size() == 2) {
        const int64_t v = std::atoll(data[f[0]].c_str()) + std::atoll(f[1].c_str());
        data[f[0]] = std::to_string(v);
        out.push_back(data[f[0]]);
        changed.notify_all();
      } else if (cmd == kDeparted) {
        for (int r : departed) out.push_back(std::to_string(r));
      } else if (cmd == kBye) {
        bye = true;
      } else {
        status = 0;
      }
      lock.unlock();
      if (!send_message(fd, status, out) || bye) break;
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (rank >= 0 && !bye && !stopping) departed.insert(rank);
    --connected;
    changed.notify_all();
  }

  void accept_loop() {
    for (;;) {
      const int fd = ::accept(listen_fd, nullptr, nullptr);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;   // shut down
      }
      std::lock_guard<std::mutex> lock(mutex);
      if (stopping) {
        ::close(fd);
        return;
      }
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ++connected;
      auto c = std::make_unique<Client>();
      c->fd = fd;
      try {
        c->thread = std::thread([this, fd] { serve(fd); });
      } catch (const std::system_error&) {   // no thread for this client: it sees its connection closed
        --connected;
        ::close(fd);
        continue;
      }
      clients.push_back(std::move(c));
    }
  }

  /// Waits (up to grace) for the other clients to leave, then stops every thread.
  void stop(std::chrono::milliseconds grace) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait_for(lock, grace, [&] { return connected <= 0; });
      stopping = true;
      changed.notify_all();
      for (auto& c : clients) ::shutdown(c->fd, SHUT_RDWR);
    }
    ::shutdown(listen_fd, SHUT_RDWR);
    if (acceptor.joinable()) acceptor.join();
    for (auto& c : clients) {
      if (c->thread.joinable()) c->thread.join();
      ::close(c->fd);
    }
    ::close(listen_fd);
  }
};

TCPStore::TCPStore(const std::string& host, int port, bool is_master, int rank, std::chrono::milliseconds timeout)
    : host_(host), port_(port), timeout_(timeout) {
  if (port < 0 || port > 65535) fail("TCPStore: port " + std::to_string(port) + " is out of range [0, 65535]");
  if (is_master) {
    auto s = std::make_unique<Server>();
    s->listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->listen_fd < 0) fail(std::string("TCPStore: socket: ") + std::strerror(errno));
    int one = 1;
    ::setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);   // every interface, as c10d's TCPStore: other machines connect
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (::bind(s->listen_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s->listen_fd, 128) != 0) {
      const std::string why = std::strerror(errno);
      ::close(s->listen_fd);
      fail("TCPStore: rank 0 cannot serve the store on port " + std::to_string(port) + ": " + why +
           " (is MASTER_PORT in use by another job?)");
    }
    socklen_t len = sizeof a;
    ::getsockname(s->listen_fd, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = s->port = ntohs(a.sin_port);
    Server* raw = s.get();
    try {
      s->acceptor = std::thread([raw] { raw->accept_loop(); });
    } catch (const std::system_error& e) {
      ::close(s->listen_fd);
      fail(std::string("TCPStore: rank 0 cannot start the store's thread: ") + e.what());
    }
    server_ = std::move(s);
  }
  // Connect, retrying while the server is not up yet (rank 0 may start last).
  const auto deadline = Clock::now() + timeout;
  std::string why = "no attempt";
  for (;;) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    const int g = ::getaddrinfo(host.c_str(), std::to_string(port_).c_str(), &hints, &res);
    if (g != 0) {
      why = std::string("cannot resolve the host: ") + ::gai_strerror(g);
    } else {
      for (addrinfo* ai = res; ai != nullptr && fd_ < 0; ai = ai->ai_next) {
        const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
          fd_ = fd;
        } else {
          why = std::strerror(errno);
          ::close(fd);
        }
      }
      ::freeaddrinfo(res);
    }
    if (fd_ >= 0) break;
    if (Clock::now() >= deadline) {
      if (server_) server_->stop(std::chrono::milliseconds(0));
      fail("init_process_group: rank " + std::to_string(rank) + " could not reach the store at " + address() +
           " within " + std::to_string(timeout.count()) + " ms (" + why +
           "): rank 0 serves it; did rank 0 start, and are MASTER_ADDR and MASTER_PORT the same on every rank?");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  request(kHello, {std::to_string(rank)}, std::chrono::milliseconds(0));
}

TCPStore::~TCPStore() {
  if (fd_ >= 0) ::close(fd_);
  if (server_) server_->stop(std::chrono::milliseconds(0));
}

std::string TCPStore::address() const { return host_ + ":" + std::to_string(port_); }

std::string TCPStore::local_address() const {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  char buf[INET6_ADDRSTRLEN] = "";
  if (fd_ < 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "127.0.0.1";
  if (a.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&a)->sin_addr, buf, sizeof buf);
  else
    ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&a)->sin6_addr, buf, sizeof buf);
  return buf;
}

std::string TCPStore::request(uint8_t cmd, const std::vector<std::string>& fields, std::chrono::milliseconds wait) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) fail("TCPStore: the connection to " + address() + " is closed");
  const std::string lost = "the store at " + address() + " (served by rank 0) ";
  if (!send_message(fd_, cmd, fields)) fail(lost + "closed the connection: rank 0 exited?");
  uint8_t status = 0;
  std::vector<std::string> out;
  const int r = recv_message(fd_, status, out, Clock::now() + wait + timeout_);
  if (r == 0) fail(lost + "closed the connection: rank 0 exited?");
  if (r < 0) fail(lost + "did not answer within " + std::to_string((wait + timeout_).count()) + " ms: rank 0 is stuck?");
  std::string joined(1, static_cast<char>(status));
  for (const auto& f : out) {   // status byte, then length-prefixed fields, for the callers to split
    const uint32_t n = static_cast<uint32_t>(f.size());
    joined.append(reinterpret_cast<const char*>(&n), 4);
    joined += f;
  }
  return joined;
}

namespace {
std::vector<std::string> split(const std::string& reply) {
  std::vector<std::string> out;
  std::size_t at = 1;
  while (at + 4 <= reply.size()) {
    uint32_t n;
    std::memcpy(&n, reply.data() + at, 4);
    out.push_back(reply.substr(at + 4, n));
    at += 4 + n;
  }
  return out;
}
}  // namespace

void TCPStore::set(const std::string& key, const std::string& value) {
  request(kSet, {key, value}, std::chrono::milliseconds(0));
}

std::string TCPStore::get(const std::string& key) {
  wait({key}, timeout_);
  const std::string r = request(kGet, {key}, std::chrono::milliseconds(0));
  if (r[0] != 1) fail("TCPStore: key '" + key + "' vanished from " + address());
  const std::vector<std::string> fields = split(r);
  if (fields.empty()) fail("TCPStore: malformed reply to get('" + key + "') from " + address());
  return fields[0];
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  return request(kCheck, keys, std::chrono::milliseconds(0))[0] == 1;
}

void TCPStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::vector<std::string> fields{std::to_string(timeout.count())};
  fields.insert(fields.end(), keys.begin(), keys.end());
  const std::string r = request(kWait, fields, timeout);
  if (r[0] == 1) return;
  std::string missing;
  for (const auto& k : split(r)) missing += (missing.empty() ? "'" : ", '") + k + "'";
  fail("TCPStore: timed out after " + std::to_string(timeout.count()) + " ms waiting for " + missing + " at " + address());
}

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  const std::vector<std::string> fields =
      split(request(kAdd, {key, std::to_string(delta)}, std::chrono::milliseconds(0)));
  if (fields.empty()) fail("TCPStore: malformed reply to add('" + key + "') from " + address());
  return std::atoll(fields[0].c_str());
}

std::vector<int> TCPStore::departed_ranks() {
  std::vector<int> out;
  for (const auto& f : split(request(kDeparted, {}, std::chrono::milliseconds(0)))) out.push_back(std::atoi(f.c_str()));
  return out;
}

void TCPStore::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fd_ >= 0) {
      if (send_message(fd_, kBye, {})) {
        uint8_t status;
        std::vector<std::string> out;
        recv_message(fd_, status, out, Clock::now() + std::chrono::milliseconds(1000));
      }
      ::close(fd_);
      fd_ = -1;
    }
  }
  if (server_) {
    server_->stop(timeout_);
    server_.reset();
  }
}

}  // namespace distributed
}  // namespace tg
