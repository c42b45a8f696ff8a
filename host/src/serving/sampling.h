// Internal glue of the serving room: resolved generation options as engine settings.
#pragma once
#include <cstdint>

#include "hostlm/sampler.h"
#include "hostlm/text_generation.h"

namespace hostlm::serving {

// Sampler settings for options whose fields are all set (request over model over server
// defaults). `context` resolves repeat_last_n = -1. A negative seed draws a random one.
// Throws InvalidRequest for values out of range or options the sampler cannot honour.
SamplerParams sampler_params(const GenerationOptions& resolved, int64_t context);

}  // namespace hostlm::serving
