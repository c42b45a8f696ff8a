#include "connection_probe.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

namespace hostlm::http {
namespace {

// "127.0.0.1" / "::1" and a port, as the kernel reports an endpoint.
bool same_endpoint(const sockaddr_storage& a, const std::string& addr, int port) {
  char text[INET6_ADDRSTRLEN] = {};
  int got_port = -1;
  if (a.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&a);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    got_port = ntohs(in->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    got_port = ntohs(in6->sin6_port);
  } else {
    return false;
  }
  return got_port == port && addr == text;
}

}  // namespace

ConnectionProbe::ConnectionProbe(const std::string& remote_addr, int remote_port,
                                 const std::string& local_addr, int local_port) {
  if (remote_port <= 0 || local_port <= 0) return;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage peer{}, self{};
    socklen_t peer_len = sizeof peer, self_len = sizeof self;
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0 ||
        getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&self), &self_len) != 0)
      continue;
    if (same_endpoint(peer, remote_addr, remote_port) &&
        same_endpoint(self, local_addr, local_port)) {
      fd_ = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
}

bool ConnectionProbe::client_connected() const {
  if (fd_ < 0) return true;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return true;  // nothing happened on the connection
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return false;
  // Readable: either bytes of a pipelined request (still connected) or the end of the stream.
  char byte;
  const ssize_t n = recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n != 0;
}

}  // namespace hostlm::http
