// /api/show "model_info" lives with the store now (hostlm/ollama/show.h), shared with
// `hostlm show`.
#pragma once
#include "hostlm/ollama/show.h"
