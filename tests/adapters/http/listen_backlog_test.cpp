// The HTTP server's listening socket holds a burst of connections: cpp-httplib's own backlog
// of 5 dropped most of 64 clients connecting at once, each retrying a second later. With
// the server bound but not yet accepting, every connection of the burst must complete its
// handshake within a fraction of that second.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "hostlm/http/server.h"

namespace hostlm::http {
namespace {

TEST(HttpServer, ABurstOfConnectionsWaitsInTheBacklog) {
  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  Server server(options);
  server.bind();  // nothing accepts: each connection can only wait in the backlog
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(server.port()));
  ASSERT_EQ(inet_pton(AF_INET, "127.0.0.1", &address.sin_addr), 1);
  constexpr int kClients = 128;
  std::vector<int> fds;
  for (int i = 0; i < kClients; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
    connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);  // in progress
  }
  int connected = 0;
  for (int fd : fds) {
    pollfd p{fd, POLLOUT, 0};
    int error = -1;
    socklen_t size = sizeof error;
    if (poll(&p, 1, 300) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) == 0 &&
        error == 0)
      ++connected;
  }
  for (int fd : fds) close(fd);
  EXPECT_EQ(connected, kClients);
}

}  // namespace
}  // namespace hostlm::http
