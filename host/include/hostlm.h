/* hostlm C API: load a model, tokenize, and chat with streamed output.
 *
 * For bindings (ctypes, cffi, other languages): only C types cross this boundary, handles
 * are opaque, every load has a free, and each call returns an error code (or NULL) with the
 * message in hostlm_last_error(). Calls on one model may come from several threads at once:
 * each model holds one engine that batches their generations together. */
#ifndef HOSTLM_H
#define HOSTLM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a struct layout or a signature below changes, so a binding can refuse a
 * library it was not written for (compare with hostlm_c_api_version()). New functions are
 * added without a bump: a binding that wants one looks its symbol up. */
#define HOSTLM_C_API_VERSION 5

/* Error codes: 0 is success, every failure is negative. */
#define HOSTLM_OK 0
#define HOSTLM_ERR_INVALID_ARGUMENT (-1) /* a NULL handle, bad JSON, a bad sampling value */
#define HOSTLM_ERR_BUSY (-2)             /* the model's queue of requests is full */
#define HOSTLM_ERR_GENERATION (-3)       /* the model failed while generating */
#define HOSTLM_ERR_INTERNAL (-4)         /* anything else (out of memory, a bug) */

/* Kinds of text passed to hostlm_on_text. */
#define HOSTLM_TEXT_CONTENT 0
#define HOSTLM_TEXT_REASONING 1

/* How a generation ended (hostlm_generation_stats.done_reason). */
#define HOSTLM_DONE_STOP 0      /* the model ended its answer */
#define HOSTLM_DONE_LENGTH 1    /* max_tokens or the context was reached */
#define HOSTLM_DONE_CANCELLED 2 /* the callback returned 0 */

typedef struct hostlm_model hostlm_model;

/* The version of this API the library was built with (HOSTLM_C_API_VERSION). */
int32_t hostlm_c_api_version(void);

/* The message of the last failed call on this thread; "" when there was none. Valid until
 * the next failing call on the same thread. */
const char* hostlm_last_error(void);

typedef struct hostlm_model_params {
  const char* backend;   /* "auto", "cpu" or "cuda"; NULL means "auto" */
  int32_t threads;       /* CPU threads; 0: one per core */
  int64_t context;       /* most tokens (prompt + answer) of one generation */
  int32_t max_sequences; /* generations decoded together */
  /* Since version 2. */
  const char* kv_type;  /* KV cache rows: "f16", "q8_0" or "f32"; NULL means "f16" */
  int32_t prefix_cache; /* 1: reuse the pages and state of earlier prompts' prefixes; 0: off */
  int64_t kv_cache_mib; /* KV page pool in MiB; 0: enough for max_sequences full contexts */
  /* Since version 3. Layers on the GPU, as hostlm's --gpu-layers and llama.cpp's -ngl: -1 all,
   * 0 none (the CPU backend), N in between the last N (the first ones run on the CPU). */
  int32_t gpu_layers;
  /* Since version 4. Mixture-of-experts models: the experts of the first N layers on the CPU,
   * the rest on the GPU, as hostlm's --n-cpu-moe and llama.cpp's: 0 none, -1 every layer. */
  int32_t cpu_moe_layers;
  /* Since version 5. The linear layers' recurrent states: "f32" (the model's own), "f16" or
   * "bf16" (half their memory; faster with many sequences), as hostlm's --state-type; NULL
   * means "f32". */
  const char* state_type;
} hostlm_model_params;

/* Defaults the caller then edits. */
hostlm_model_params hostlm_model_default_params(void);

/* Loads a GGUF file or a Hugging Face folder (UTF-8 path). NULL on error. */
hostlm_model* hostlm_model_load(const char* path, hostlm_model_params params);

/* Stops the model's generations and frees it; NULL is ignored. No call on the model may be
 * running or start after this. */
void hostlm_model_free(hostlm_model* model);

/* Number of token ids the tokenizer knows; negative error code on a NULL model. */
int32_t hostlm_model_n_vocab(const hostlm_model* model);

/* Tokenizes NUL-terminated UTF-8 `text`. parse_special != 0 turns
 * special-token text such as "<|im_start|>" into its id; 0 treats it as plain text (safe
 * for untrusted input). BOS is added when the tokenizer asks for it. Returns the number of
 * ids written to `out`, or, when more than `capacity` are needed, minus that number and
 * writes nothing: call again with a larger buffer. An error is INT32_MIN (see last_error). */
int32_t hostlm_tokenize(const hostlm_model* model, const char* text, int32_t parse_special,
                        int32_t* out, size_t capacity);

/* Writes the UTF-8 text of `n_tokens` ids into `out` with a terminating NUL. Returns the
 * text's length in bytes, or, when `capacity` cannot hold it and its NUL, minus the
 * capacity needed (nothing written). Unknown ids are skipped. INT32_MIN on error. */
int32_t hostlm_detokenize(const hostlm_model* model, const int32_t* tokens, size_t n_tokens,
                          int32_t skip_special, char* out, size_t capacity);

typedef struct hostlm_generate_params {
  /* Exactly one of the two: a JSON array of OpenAI-style messages
   * ([{"role": "user", "content": "Hi"}]), rendered with the model's chat template; or raw
   * prompt text, tokenized with special tokens parsed and generated as content. */
  const char* messages_json;
  const char* prompt;
  const char* tools_json; /* OpenAI-style tool definitions for messages_json; NULL: none */
  int32_t think;          /* -1: the model's default, 0: off, 1: on */
  float temperature;      /* <= 0: greedy */
  int32_t top_k;          /* 0: off */
  float top_p;            /* 1: off */
  float min_p;            /* 0: off */
  float repeat_penalty;   /* 1: off */
  int32_t repeat_last_n;  /* tokens the repeat penalty looks back on */
  uint64_t seed;
  int32_t max_tokens; /* < 0: until the model stops or the context is full */
} hostlm_generate_params;

/* Defaults the caller then edits (messages_json and prompt are NULL). */
hostlm_generate_params hostlm_generate_default_params(void);

typedef struct hostlm_generation_stats {
  int32_t prompt_tokens;
  int32_t generated_tokens; /* the end token not counted */
  int32_t done_reason;      /* HOSTLM_DONE_* */
  double prompt_ms;         /* evaluating the prompt */
  double generate_ms;       /* generating the answer */
} hostlm_generation_stats;

/* Receives the answer as it is decoded: `text` (NUL-terminated, whole UTF-8 characters, only
 * valid during the call) and its kind (HOSTLM_TEXT_*). Return 0 to stop the generation.
 * Called on the thread that called hostlm_chat. */
typedef int32_t (*hostlm_on_text)(const char* text, int32_t kind, void* user);

/* Generates an answer and streams it to on_text (may be NULL). Blocks until the generation
 * ends. `stats` (may be NULL) is filled on success. Returns HOSTLM_OK, including when the
 * callback stopped it, or an error code. */
int32_t hostlm_chat(hostlm_model* model, const hostlm_generate_params* params,
                    hostlm_on_text on_text, void* user, hostlm_generation_stats* stats);

/* Called on the thread that called hostlm_chat_with_progress once per generated token,
 * before that token's text (if any) reaches on_text: `generated` tokens so far out of at most
 * `max_tokens` (max_tokens after clamping to the context). Lets a caller drive a progress bar
 * and notice a cancel request even while the parser holds text back. Return 0 to stop. */
typedef int32_t (*hostlm_on_progress)(int32_t generated, int32_t max_tokens, void* user);

/* hostlm_chat with a progress callback (may be NULL); both callbacks get `user`. */
int32_t hostlm_chat_with_progress(hostlm_model* model, const hostlm_generate_params* params,
                                  hostlm_on_text on_text, hostlm_on_progress on_progress,
                                  void* user, hostlm_generation_stats* stats);

/* What a loaded model is, for bindings that show it or budget memory. */

/* The backend the model runs on ("cpu" or "cuda"; what "auto" chose). NULL on a NULL model.
 * Valid until the model is freed. */
const char* hostlm_model_backend(const hostlm_model* model);

/* Layers of the network, and the context length it was trained for (0 when the file does not
 * say). Negative error code on a NULL model. */
int64_t hostlm_model_n_layers(const hostlm_model* model);
int64_t hostlm_model_n_ctx_train(const hostlm_model* model);

/* The context given at load: the most tokens (prompt + answer) of one generation. */
int64_t hostlm_model_context(const hostlm_model* model);

#ifdef __cplusplus
}
#endif

#endif /* HOSTLM_H */
