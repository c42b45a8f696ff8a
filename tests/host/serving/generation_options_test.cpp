// Option layering and Go durations, as the adapters hand them to the serving core.
#include <gtest/gtest.h>

#include "hostlm/serving.h"

namespace hostlm {
namespace {

using std::chrono::nanoseconds;

TEST(GenerationOptions, RequestOverModelOverServer) {
  GenerationOptions request;
  request.temperature = 0.1f;
  GenerationOptions model;
  model.temperature = 0.5f;
  model.num_predict = 12;
  model.stop = std::vector<std::string>{"END"};
  request.inherit(model);
  request.inherit(GenerationOptions::ollama_defaults());
  EXPECT_FLOAT_EQ(*request.temperature, 0.1f);
  EXPECT_EQ(*request.num_predict, 12);
  EXPECT_EQ(request.stop->at(0), "END");
  EXPECT_EQ(*request.top_k, 40);  // Ollama's default
  EXPECT_FLOAT_EQ(*request.top_p, 0.9f);
}

TEST(GenerationOptions, EmptyStopListIsAValueNotAbsence) {
  GenerationOptions request;
  request.stop = std::vector<std::string>{};
  GenerationOptions model;
  model.stop = std::vector<std::string>{"x"};
  request.inherit(model);
  EXPECT_TRUE(request.stop->empty());
}

TEST(ParseDuration, GoDurationsAndSeconds) {
  EXPECT_EQ(parse_duration("5m"), std::chrono::minutes(5));
  EXPECT_EQ(parse_duration("1h30m"), std::chrono::minutes(90));
  EXPECT_EQ(parse_duration("300ms"), std::chrono::milliseconds(300));
  EXPECT_EQ(parse_duration("1.5s"), std::chrono::milliseconds(1500));
  EXPECT_EQ(parse_duration("0"), nanoseconds(0));
  EXPECT_EQ(parse_duration("3600"), std::chrono::hours(1));
  EXPECT_LT(parse_duration("-1m"), nanoseconds(0));
  EXPECT_LT(parse_duration("-1"), nanoseconds(0));
}

TEST(ParseDuration, MalformedTextNamesItself) {
  for (const char* bad : {"", "5x", "m", "1h-3m", "abc"}) {
    try {
      parse_duration(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InvalidRequest& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("\"") + bad + "\""), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace hostlm
