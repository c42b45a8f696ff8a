#include "hostlm/error.h"

namespace hostlm {

Error::~Error() = default;

}  // namespace hostlm
