// The guesser's reading of utterances (runtime/utterance_match.h).
#include "runtime/utterance_match.h"

#include <gtest/gtest.h>

namespace fgemma {
namespace {

TEST(UtteranceMatch, ValuesAreSaidAsWholeWordsIgnoringCase) {
  EXPECT_TRUE(SaysValue("Set the kitchen lights to 40 percent", "40"));
  EXPECT_FALSE(SaysValue("set it to 140", "40"));
  EXPECT_FALSE(SaysValue("set it to 405", "40"));
  EXPECT_TRUE(SaysValue("Heat the living room", "heat"));
  EXPECT_FALSE(SaysValue("preheat the oven", "heat"));
  EXPECT_TRUE(SaysValue("play jazz in the Living Room", "living room"));
  EXPECT_TRUE(SaysValue("alarm at 07:15 please", "07:15"));
  EXPECT_FALSE(SaysValue("alarm at 07:15 please", "06:30"));
  EXPECT_TRUE(SaysValue("lo-fi beats", "lo-fi"));
  EXPECT_EQ(FindValue("volume 30 in the kitchen", "30"), 9u);
  EXPECT_EQ(FindValue("volume 30", ""), 0u);
}

TEST(UtteranceMatch, NumbersAndNumbersBeingWritten) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(Numbers("Heat the living room to 22.5 degrees"), (V{"22.5"}));
  EXPECT_EQ(Numbers("dim to 20% then 3."), (V{"20", "3"}));
  EXPECT_EQ(Numbers("play mp3 files"), V{});
  EXPECT_EQ(Numbers("wake me at 6:30"), (V{"6", "30"}));  // a time: the slot rule skips such utterances
  EXPECT_EQ(NumberSoFar("call:set_volume{level:30"), "30");
  EXPECT_EQ(NumberSoFar("call:set_volume{level:"), "");
  EXPECT_EQ(NumberSoFar("{room:<escape>kit"), "");
}

TEST(UtteranceMatch, CopiedTextEndsBeforeShortWordsInFrontOfAnEnumValue) {
  const std::vector<std::string> enums = {"kitchen", "living room", "office"};
  EXPECT_EQ(TextEnd(" in the living room", enums), 0u);
  const std::string_view song = "hemian Rhapsody by Queen in the kitchen at volume 30";
  EXPECT_EQ(song.substr(0, TextEnd(song, enums)), "hemian Rhapsody by Queen");
  EXPECT_EQ(TextEnd(" beats from the 80s", enums), std::string_view::npos);
  EXPECT_EQ(TextEnd("kitchen", enums), std::string_view::npos);  // a word cont starts inside does not count
}

TEST(UtteranceMatch, DigitFormsTakeTheUtterancesNumbers) {
  std::string out;
  EXPECT_TRUE(FillDigits("2026-06-27T17:45:00", "Put Dentist in my calendar on 2026-01-21 at 08:45", &out));
  EXPECT_EQ(out, "2026-01-21T08:45:00");  // the unsaid seconds keep the form's zeros
  EXPECT_TRUE(FillDigits("07:15", "wake me at 6:30", &out));
  EXPECT_EQ(out, "06:30");  // padded to the form's run
  EXPECT_TRUE(FillDigits("+1 555 607 8364", "phone +1 555 805 5518", &out));
  EXPECT_EQ(out, "+1 555 805 5518");
  EXPECT_FALSE(FillDigits("2026-06-27T17:45:00", "on 2026-01-21", &out));  // the hour left unfilled is not zeros
  EXPECT_FALSE(FillDigits("06:30", "at 1200", &out));                    // a number longer than its place
  EXPECT_FALSE(FillDigits("06:30", "no numbers said", &out));
  EXPECT_FALSE(FillDigits("gym", "at 6:30", &out));                      // no digits to fill
}

TEST(UtteranceMatch, WordsAndNameParts) {
  EXPECT_EQ(Words("Turn ON the lights!"), (std::vector<std::string>{"turn", "on", "the", "lights"}));
  EXPECT_TRUE(Names("lights", "light"));
  EXPECT_TRUE(Names("playlist", "play"));
  EXPECT_FALSE(Names("set", "settings"));
  EXPECT_TRUE(Names("set", "set"));
}

}  // namespace
}  // namespace fgemma
