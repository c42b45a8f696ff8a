// The default of Model::eval_hidden: a model that does not say how to produce embeddings.
// Out of line so that the error is built in libhostlm, not in each plugin.
#include "hostlm/error.h"
#include "hostlm/plugin_api.h"

namespace hostlm {

void Model::eval_hidden(Sequence&, std::span<const int32_t>, std::span<float>) {
  throw Error(info().architecture + " models do not produce embeddings in hostlm yet");
}

}  // namespace hostlm
