// parse_json: JSON from outside tune, bounded in nesting, never throwing.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "base/json.h"

namespace tune {
namespace {

std::string nested_arrays(int depth, const std::string& inside = "1") {
  return std::string(static_cast<size_t>(depth), '[') + inside + std::string(static_cast<size_t>(depth), ']');
}

// A random JSON value as results hold them: objects of numbers and strings,
// some nesting, keys and strings with escapes and (invalid) UTF-8.
Json arbitrary_json(int depth) {
  const int kind = *rc::gen::inRange(0, depth > 0 ? 9 : 7);
  switch (kind) {
    case 0: return nullptr;
    case 1: return *rc::gen::arbitrary<bool>();
    case 2: return *rc::gen::arbitrary<int64_t>();
    case 3: return *rc::gen::arbitrary<uint64_t>();
    case 4: return *rc::gen::arbitrary<double>();  // rapidcheck's include NaN and infinities
    case 5: return *rc::gen::element(0.0, -0.0, 1.0, 1e16, 1e-5, 123456789012.0, 0.1, 5e-324, 1.7976931348623157e308);
    case 6: return *rc::gen::arbitrary<std::string>();
    case 7: {
      Json array = Json::array();
      for (int n = *rc::gen::inRange(0, 4); n > 0; --n) array.push_back(arbitrary_json(depth - 1));
      return array;
    }
    default: {
      Json object = Json::object();
      for (int n = *rc::gen::inRange(0, 6); n > 0; --n) {
        object[*rc::gen::oneOf(rc::gen::element<std::string>("loss", "training_iteration", "a\"b", "caf\u00e9", "\x01"),
                               rc::gen::arbitrary<std::string>())] = arbitrary_json(depth - 1);
      }
      return object;
    }
  }
}

// nlohmann's dump with invalid UTF-8 replaced, floats aside; the text reads
// back to the same value (a float as the same double, still a float).
RC_GTEST_PROP(DumpJson, ReadsBackToTheValueAndMatchesNlohmannButForFloats, ()) {
  const Json value = arbitrary_json(3);
  const std::string text = dump_json(value);
  const std::string theirs = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  const Json back = Json::parse(text);
  RC_ASSERT(back == Json::parse(theirs));
  if (theirs.find_first_of(".eE") == std::string::npos) RC_ASSERT(text == theirs);
}

TEST(DumpJson, FloatsStayFloatsAndNonFiniteIsNull) {
  EXPECT_EQ(dump_json(Json(1.0)), "1.0");
  EXPECT_EQ(dump_json(Json(-0.0)), "-0.0");
  EXPECT_EQ(dump_json(Json(0.1)), "0.1");
  EXPECT_EQ(dump_json(Json(1e16)), "1e+16");
  EXPECT_EQ(dump_json(Json(123456789012.0)), "123456789012.0");
  EXPECT_EQ(dump_json(Json(std::nan(""))), "null");
  EXPECT_EQ(dump_json(Json(-std::numeric_limits<double>::infinity())), "null");
  EXPECT_TRUE(Json::parse(dump_json(Json(1e16))).is_number_float());
  EXPECT_EQ(dump_json(Json({{"loss", 0.25}, {"n", 3}, {"tag", "a\"b\n"}, {"u", "\xff"}})),
            "{\"loss\":0.25,\"n\":3,\"tag\":\"a\\\"b\\n\",\"u\":\"\xef\xbf\xbd\"}")
      << "escapes as nlohmann writes them, invalid UTF-8 replaced by U+FFFD";
}

TEST(ParseJson, ReadsWhatNlohmannReads) {
  std::string why = "untouched";
  const Json value = parse_json(R"({"loss": 0.5, "tags": ["a", {"b": null}], "n": 3})", kMaxJsonDepth, &why);
  ASSERT_FALSE(value.is_discarded());
  EXPECT_EQ(value, Json({{"loss", 0.5}, {"tags", {"a", {{"b", nullptr}}}}, {"n", 3}}));
  EXPECT_TRUE(value["n"].is_number_integer());
  EXPECT_EQ(why, "untouched") << "why is only written on failure";
  EXPECT_EQ(parse_json("  17 "), Json(17));
}

TEST(ParseJson, AcceptsExactlyMaxDepthLevels) {
  EXPECT_EQ(parse_json(nested_arrays(3), 3), Json::parse(nested_arrays(3)));
  EXPECT_TRUE(parse_json(nested_arrays(4), 3).is_discarded());
  EXPECT_FALSE(parse_json(R"({"a": {"b": [1]}})", 3).is_discarded());
  EXPECT_TRUE(parse_json(R"({"a": {"b": [[1]]}})", 3).is_discarded());
  EXPECT_FALSE(parse_json("5", 0).is_discarded());
  EXPECT_TRUE(parse_json("[]", 0).is_discarded());
}

// The issue's line: nlohmann parses 60,000 levels iteratively, then its
// copies and destructors recurse once per level and overflow the stack.
TEST(ParseJson, RefusesTheDeepResultThatCrashedTheDriver) {
  const std::string text = R"({"loss": 0.5, "deep": )" + nested_arrays(60000) + "}";
  std::string why;
  EXPECT_TRUE(parse_json(text, kMaxJsonDepth, &why).is_discarded());
  EXPECT_EQ(why, "nested deeper than 128 levels");
  EXPECT_TRUE(parse_json(nested_arrays(kMaxJsonDepth + 1)).is_discarded()) << "the default bound";
  EXPECT_FALSE(parse_json(nested_arrays(kMaxJsonDepth)).is_discarded());
}

TEST(ParseJson, BracketsInsideStringsDoNotCount) {
  const std::string text = R"({"s": "[[[[[[{{{{\"[[[[", "t": "\\"})";
  const Json value = parse_json(text, 1);
  ASSERT_FALSE(value.is_discarded()) << "one object deep; the brackets are text";
  EXPECT_EQ(value["s"], "[[[[[[{{{{\"[[[[");
  EXPECT_EQ(value["t"], "\\");
}

TEST(ParseJson, SaysWhyOnOneLine) {
  struct Case {
    std::string text, expected;
  };
  const Case cases[] = {
      {"{not json", "syntax error"},
      {R"({"loss": 1e400})", "number overflow parsing '1e400'"},
      {"", "unexpected end of input"},
      {"{\"a\": 1} trailing", "syntax error"},
      {"{\"a\":\n\"x\ty\"}", "control character"},
      {std::string("{\"a\":\n\"x\0y\"}", 12), "a NUL byte at offset 8 (JSON has none)"},
  };
  for (const auto& c : cases) {
    std::string why;
    EXPECT_TRUE(parse_json(c.text, kMaxJsonDepth, &why).is_discarded()) << c.text;
    EXPECT_NE(why.find(c.expected), std::string::npos) << c.text << " -> " << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
    EXPECT_EQ(why.find("json.exception"), std::string::npos) << "nlohmann's prefix is cut: " << why;
  }
}

// nlohmann takes a NUL for the end of the text: what follows would be
// dropped without a word.
TEST(ParseJson, ANulByteIsRefusedNotTakenForTheEnd) {
  std::string why;
  EXPECT_TRUE(parse_json(std::string("{\"loss\": 1}\0{\"loss\": 99}", 24), kMaxJsonDepth, &why).is_discarded());
  EXPECT_EQ(why, "a NUL byte at offset 11 (JSON has none)");
  EXPECT_EQ(parse_json(R"({"s": "a\u0000b"})")["s"], std::string("a\0b", 3)) << "an escaped NUL is text";
}

TEST(ParseJson, AnOffendingLongTokenIsShortenedInWhy) {
  std::string why;
  EXPECT_TRUE(parse_json("[\"" + std::string(100000, 'x'), kMaxJsonDepth, &why).is_discarded());
  EXPECT_LT(why.size(), 300u);
}

TEST(ParseJson, ReadsAStreamToItsEnd) {
  std::istringstream good(R"({"trainable": "mlp", "config": {"lr": 0.1}})");
  EXPECT_EQ(parse_json(good)["config"]["lr"], 0.1);
  std::istringstream deep(nested_arrays(500));
  std::string why;
  EXPECT_TRUE(parse_json(deep, kMaxJsonDepth, &why).is_discarded());
  EXPECT_EQ(why, "nested deeper than 128 levels");
}

TEST(OneLine, EscapesControlBytesAsJsonDoes) {
  EXPECT_EQ(one_line("plain text, \"quoted\" and caf\xc3\xa9"), "plain text, \"quoted\" and caf\xc3\xa9");
  EXPECT_EQ(one_line("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(one_line(std::string("a\0b\x1b[31m\x7f", 9)), "a\\u0000b\\u001b[31m\\u007f");
}

TEST(OneLine, CutsLongTextWithoutSplittingACharacter) {
  EXPECT_EQ(one_line("abcdef", 3), "abc...");
  EXPECT_EQ(one_line("abc", 3), "abc");
  EXPECT_EQ(one_line("ab\xc3\xa9z", 3), "ab...") << "the 2-byte character does not fit";
  EXPECT_EQ(one_line("\n\n", 1), "\\n...") << "the limit counts input bytes";
}

}  // namespace
}  // namespace tune

TEST(JsonField, TakesAValueOfTheRightKindAndFallsBackOtherwise) {
  const tune::Json detail = tune::Json::parse(
      R"({"attempt": 2, "host": "h1", "big": 1e300, "neg": -3, "hosts": ["a"], "flag": true, "wrong": "2"})");
  EXPECT_EQ(tune::json_field(detail, "attempt", 0), 2);
  EXPECT_EQ(tune::json_field(detail, "wrong", 7), 7);             // a string where a number belongs
  EXPECT_EQ(tune::json_field(detail, "missing", 7), 7);
  EXPECT_EQ(tune::json_field(detail, "big", 7), 7);               // a float is not an integer
  EXPECT_EQ(tune::json_field(detail, "neg", uint32_t{9}), 9u);    // out of the type's range
  EXPECT_DOUBLE_EQ(tune::json_field(detail, "big", 0.0), 1e300);
  EXPECT_DOUBLE_EQ(tune::json_field(detail, "attempt", 0.0), 2.0);
  EXPECT_EQ(tune::json_field(detail, "host", std::string("-")), "h1");
  EXPECT_EQ(tune::json_field(detail, "attempt", std::string("-")), "-");
  EXPECT_EQ(tune::json_field(detail, "hosts", tune::Json::array()), tune::Json::array({"a"}));
  EXPECT_EQ(tune::json_field(detail, "host", tune::Json::array()), tune::Json::array());
  EXPECT_TRUE(tune::json_field(detail, "flag", false));
  EXPECT_FALSE(tune::json_field(detail, "attempt", false));
  EXPECT_EQ(tune::json_field(tune::Json("not an object"), "attempt", 5), 5);
  EXPECT_EQ(tune::json_field(tune::Json(), "attempt", 5), 5);
}
