// GenerationOptions layering, its translation into sampler settings, and Go durations.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <random>

#include "hostlm/serving.h"
#include "serving/sampling.h"

namespace hostlm {

void GenerationOptions::inherit(const GenerationOptions& base) {
  auto fill = [](auto& field, const auto& from) {
    if (!field) field = from;
  };
  fill(num_predict, base.num_predict);
  fill(temperature, base.temperature);
  fill(top_p, base.top_p);
  fill(min_p, base.min_p);
  fill(typical_p, base.typical_p);
  fill(top_k, base.top_k);
  fill(repeat_penalty, base.repeat_penalty);
  fill(presence_penalty, base.presence_penalty);
  fill(frequency_penalty, base.frequency_penalty);
  fill(repeat_last_n, base.repeat_last_n);
  fill(seed, base.seed);
  fill(stop, base.stop);
  fill(num_ctx, base.num_ctx);
  fill(num_gpu, base.num_gpu);
  if (logit_bias.empty()) logit_bias = base.logit_bias;
}

GenerationOptions GenerationOptions::ollama_defaults() {
  GenerationOptions o;
  o.num_predict = -1;
  o.temperature = 0.8f;
  o.top_k = 40;
  o.top_p = 0.9f;
  o.min_p = 0.f;
  o.typical_p = 1.f;
  o.repeat_penalty = 1.f;
  o.repeat_last_n = 64;
  o.presence_penalty = 0.f;
  o.frequency_penalty = 0.f;
  o.seed = -1;
  o.stop = std::vector<std::string>{};
  return o;
}

namespace serving {

SamplerParams sampler_params(const GenerationOptions& o, int64_t context) {
  SamplerParams p;
  p.temperature = o.temperature.value_or(p.temperature);
  p.top_k = o.top_k.value_or(p.top_k);
  p.top_p = o.top_p.value_or(p.top_p);
  p.min_p = o.min_p.value_or(p.min_p);
  p.repeat_penalty = o.repeat_penalty.value_or(p.repeat_penalty);
  const int last_n = o.repeat_last_n.value_or(p.repeat_last_n);
  p.repeat_last_n = last_n == -1 ? static_cast<int>(context) : last_n;
  if (!std::isfinite(p.temperature) || p.temperature < 0)
    throw InvalidRequest("temperature must be a number >= 0");
  if (p.top_k < 0) throw InvalidRequest("top_k must be >= 0");
  if (!(p.top_p >= 0.f && p.top_p <= 1.f)) throw InvalidRequest("top_p must be in [0, 1]");
  if (p.top_p == 0.f) p.top_p = 1.f;  // 0 means "not set" to several clients
  if (!(p.min_p >= 0.f && p.min_p <= 1.f)) throw InvalidRequest("min_p must be in [0, 1]");
  if (!(p.repeat_penalty > 0.f)) throw InvalidRequest("repeat_penalty must be > 0");
  if (p.repeat_last_n < 0) throw InvalidRequest("repeat_last_n must be >= -1");
  p.typical_p = o.typical_p.value_or(1.f);
  if (p.typical_p == 0.f) p.typical_p = 1.f;  // 0 means "not set" to several clients
  if (!(p.typical_p > 0.f && p.typical_p <= 1.f))
    throw InvalidRequest("typical_p must be in (0, 1]");
  p.presence_penalty = o.presence_penalty.value_or(0.f);
  p.frequency_penalty = o.frequency_penalty.value_or(0.f);
  if (!std::isfinite(p.presence_penalty) || !std::isfinite(p.frequency_penalty))
    throw InvalidRequest("presence_penalty and frequency_penalty must be finite numbers");
  p.logit_bias = o.logit_bias;
  const int64_t seed = o.seed.value_or(-1);
  if (seed >= 0) {
    p.seed = static_cast<uint64_t>(seed);
  } else {
    std::random_device device;
    p.seed = (static_cast<uint64_t>(device()) << 32) | device();
  }
  return p;
}

}  // namespace serving

std::chrono::nanoseconds parse_duration(std::string_view text) {
  const std::string quoted = "invalid duration \"" + std::string(text) + "\"";
  std::string_view s = text;
  if (s.empty()) throw InvalidRequest(quoted);
  // A bare number is seconds (what clients send as JSON numbers, written as text).
  {
    double seconds = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), seconds);
    if (ec == std::errc() && end == s.data() + s.size()) {
      if (!std::isfinite(seconds)) throw InvalidRequest(quoted);
      seconds = std::clamp(seconds, -9.2e9, 9.2e9);  // +-290 years: "forever" either way
      return std::chrono::nanoseconds(static_cast<int64_t>(seconds * 1e9));
    }
  }
  bool negative = false;
  if (s.front() == '-' || s.front() == '+') {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  long double total = 0;
  if (s.empty()) throw InvalidRequest(quoted);
  while (!s.empty()) {
    double value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || value < 0) throw InvalidRequest(quoted);
    s.remove_prefix(static_cast<size_t>(end - s.data()));
    size_t unit_len = 0;
    while (unit_len < s.size() && !(s[unit_len] >= '0' && s[unit_len] <= '9') && s[unit_len] != '.')
      ++unit_len;
    const std::string_view unit = s.substr(0, unit_len);
    s.remove_prefix(unit_len);
    long double scale = 0;
    if (unit == "ns")
      scale = 1;
    else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs")
      scale = 1e3;
    else if (unit == "ms")
      scale = 1e6;
    else if (unit == "s")
      scale = 1e9;
    else if (unit == "m")
      scale = 60e9;
    else if (unit == "h")
      scale = 3600e9;
    else
      throw InvalidRequest(quoted + ": unknown unit \"" + std::string(unit) + "\"");
    total += static_cast<long double>(value) * scale;
  }
  if (total > 9.2e18L) total = 9.2e18L;
  const auto ns = static_cast<int64_t>(total);
  return std::chrono::nanoseconds(negative ? -ns : ns);
}

}  // namespace hostlm
