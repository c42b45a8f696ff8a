// Stop strings over streamed text: whatever the chunking, the released text is exactly the
// text before the first stop string, and nothing that might start one is shown early.
#include "hostlm/stop_strings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hostlm {
namespace {

struct Streamed {
  std::string text;
  bool stopped = false;
  std::string matched;
};

// Feeds `chunks` one by one, as decoded tokens arrive.
Streamed feed(const std::vector<std::string>& stops, const std::vector<std::string>& chunks) {
  StopStringMatcher m(stops);
  Streamed r;
  for (const std::string& c : chunks) {
    auto p = m.push(c);
    r.text += p.text;
    if (p.stopped) {
      r.stopped = true;
      r.matched = p.matched;
    }
  }
  r.text += m.finish();
  return r;
}

TEST(StopStrings, StopInsideOneChunk) {
  const Streamed r = feed({"END"}, {"hello END world"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "hello ");
  EXPECT_EQ(r.matched, "END");
}

TEST(StopStrings, StopSpanningChunksIsFoundAndNotShownEarly) {
  StopStringMatcher m({"</answer>"});
  auto p = m.push("the result</an");
  EXPECT_EQ(p.text, "the result");  // "</an" could start the stop string: held back
  EXPECT_FALSE(p.stopped);
  p = m.push("swer> trailing");
  EXPECT_TRUE(p.stopped);
  EXPECT_EQ(p.text, "");
  EXPECT_EQ(m.finish(), "");
}

TEST(StopStrings, HeldBackTextIsReleasedWhenItTurnsOutNotToBeAStop) {
  StopStringMatcher m({"\n\n"});
  auto p = m.push("line\n");
  EXPECT_EQ(p.text, "line");
  p = m.push("next");
  EXPECT_EQ(p.text, "\nnext");
  EXPECT_FALSE(m.stopped());
}

TEST(StopStrings, FinishReleasesAPartialMatch) {
  const Streamed r = feed({"STOP"}, {"go ST"});
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.text, "go ST");
}

TEST(StopStrings, EarliestStopWinsAndLongestAtTheSamePlace) {
  EXPECT_EQ(feed({"b", "abc"}, {"xxabcd"}).text, "xx");
  const Streamed r = feed({"\n", "\n\n"}, {"a\n\nb"});
  EXPECT_EQ(r.text, "a");
  EXPECT_EQ(r.matched, "\n\n");
}

TEST(StopStrings, NoStopsPassesEverythingThrough) {
  StopStringMatcher m({"", ""});
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.push("abc").text, "abc");
}

TEST(StopStrings, NothingAfterAStop) {
  StopStringMatcher m({"x"});
  EXPECT_TRUE(m.push("axb").stopped);
  EXPECT_EQ(m.push("more").text, "");
  EXPECT_EQ(m.finish(), "");
}

TEST(StopStrings, EveryChunkingGivesTheSameResult) {
  const std::string text = "one <stop> two <sto three <stop>";
  const std::vector<std::string> stops = {"<stop>", "thr"};
  const Streamed whole = feed(stops, {text});
  for (size_t a = 0; a <= text.size(); ++a)
    for (size_t b = a; b <= text.size(); b += 3) {
      const Streamed r = feed(stops, {text.substr(0, a), text.substr(a, b - a), text.substr(b)});
      ASSERT_EQ(r.text, whole.text) << a << " " << b;
      ASSERT_EQ(r.stopped, whole.stopped);
    }
  EXPECT_EQ(whole.text, "one ");
}

TEST(StopStrings, MultibyteTextIsNeverSplitInsideACharacter) {
  // "é" is two bytes; a stop string starting with it holds back whole characters only.
  StopStringMatcher m({"\xC3\xA9t\xC3\xA9"});
  auto p = m.push("caf\xC3\xA9");
  EXPECT_EQ(p.text, "caf");
  p = m.push(" ok");
  EXPECT_EQ(p.text, "\xC3\xA9 ok");
}

}  // namespace
}  // namespace hostlm
