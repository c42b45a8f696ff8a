// The Qwen3.5 dense model: hybrid layers of gated full attention and Gated DeltaNet.
#pragma once
#include <memory>

#include "hostlm/ops.h"
#include "hostlm/plugin_api.h"

namespace hostlm::qwen35 {

std::unique_ptr<Model> load_model(const ModelFiles& files, Backend& backend,
                                  const LoadOptions& options);

}  // namespace hostlm::qwen35
