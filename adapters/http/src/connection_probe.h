// Whether the client of a request still holds its connection, for answers that send nothing
// until the generation ends (non-streamed): cpp-httplib gives a handler no socket, so the
// probe finds the process's socket whose two ends are the request's, once, and then asks the
// kernel whether the peer has closed or reset it.
#pragma once
#include <string>

namespace hostlm::http {

class ConnectionProbe {
 public:
  // Endpoints as httplib::Request reports them (remote_addr/port, local_addr/port).
  ConnectionProbe(const std::string& remote_addr, int remote_port, const std::string& local_addr,
                  int local_port);
  // False once the peer has closed or reset the connection; true while it is open or when
  // the socket could not be identified (then nothing is ever cancelled).
  bool client_connected() const;

 private:
  int fd_ = -1;
};

}  // namespace hostlm::http
