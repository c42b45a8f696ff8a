#include "hostlm/ops.h"
