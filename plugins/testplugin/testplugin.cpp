#include "hostlm/plugin_api.h"
