/* Compiled as C (not C++) into test_capi: proves hostlm.h is valid C and callable from it. */
#include "hostlm.h"

int hostlm_capi_c_smoke(void);

int hostlm_capi_c_smoke(void) {
  hostlm_model_params mp = hostlm_model_default_params();
  hostlm_generate_params gp = hostlm_generate_default_params();
  hostlm_generation_stats stats = {0, 0, 0, 0.0, 0.0};
  /* The additions of the same version are C too: taking their addresses checks that. */
  hostlm_on_progress progress = NULL;
  const char* (*backend)(const hostlm_model*) = hostlm_model_backend;
  int32_t (*chat)(hostlm_model*, const hostlm_generate_params*, hostlm_on_text, hostlm_on_progress,
                  void*, hostlm_generation_stats*) = hostlm_chat_with_progress;
  (void)stats;
  (void)progress;
  (void)backend;
  (void)chat;
  if (mp.context <= 0 || gp.max_tokens != -1 || gp.messages_json != NULL) return -1;
  return hostlm_c_api_version();
}
