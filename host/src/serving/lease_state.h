// What a ModelLease shares: the loaded model and the manager's release hook.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <utility>

#include "serving/served_model.h"

namespace hostlm::serving {

struct LeaseState {
  LeaseState(std::shared_ptr<ServedModel> m, std::chrono::nanoseconds load,
             std::function<void()> release)
      : model(std::move(m)), load_duration(load), on_release(std::move(release)) {}
  ~LeaseState() {
    if (on_release) on_release();
  }
  LeaseState(const LeaseState&) = delete;
  LeaseState& operator=(const LeaseState&) = delete;

  std::shared_ptr<ServedModel> model;
  std::chrono::nanoseconds load_duration{0};
  std::function<void()> on_release;  // tells the manager one user fewer
};

// Starts a generation on a leased model (text_stream.cpp).
std::unique_ptr<TextStream> start_text_stream(std::shared_ptr<LeaseState> lease,
                                              TextRequest request);

}  // namespace hostlm::serving
