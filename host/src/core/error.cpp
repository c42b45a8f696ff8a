#include "hostlm/error.h"

namespace hostlm {

Error::~Error() = default;
BackendUnsupported::~BackendUnsupported() = default;

}  // namespace hostlm
