#include "search/domain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

#include "base/error.h"

namespace tune {
namespace {

using ::testing::HasSubstr;

constexpr int kDraws = 20000;

std::vector<Json> draw(const Domain& d, int n = kDraws, uint64_t seed = 42) {
  std::mt19937_64 rng(seed);
  std::vector<Json> out;
  for (int i = 0; i < n; ++i) out.push_back(d.sample(rng));
  return out;
}

std::vector<double> as_doubles(const std::vector<Json>& values) {
  std::vector<double> out;
  for (const auto& v : values) out.push_back(v.get<double>());
  return out;
}

// Kolmogorov-Smirnov statistic against the uniform CDF on [low, high].
double ks_uniform(std::vector<double> xs, double low, double high) {
  std::sort(xs.begin(), xs.end());
  double worst = 0;
  const double n = static_cast<double>(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    double cdf = (xs[i] - low) / (high - low);
    worst = std::max({worst, std::fabs((i + 1) / n - cdf), std::fabs(i / n - cdf)});
  }
  return worst;
}

bool is_multiple(double v, double q) { return std::fabs(v / q - std::round(v / q)) < 1e-6; }

std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(DomainUniform, SamplesAreDoublesInsideTheHalfOpenRange) {
  for (const Json& v : draw(uniform(-5, 10))) {
    ASSERT_TRUE(v.is_number_float());
    ASSERT_GE(v.get<double>(), -5);
    ASSERT_LT(v.get<double>(), 10);
  }
}

TEST(DomainUniform, MeanAndVarianceMatchWithinFourSigma) {
  const double a = 2, b = 6, n = kDraws;
  auto xs = as_doubles(draw(uniform(a, b)));
  double mean = 0, var = 0;
  for (double x : xs) mean += x / n;
  for (double x : xs) var += (x - mean) * (x - mean) / (n - 1);
  const double true_var = (b - a) * (b - a) / 12;
  EXPECT_NEAR(mean, (a + b) / 2, 4 * std::sqrt(true_var / n));
  const double mu4 = std::pow(b - a, 4) / 80;
  EXPECT_NEAR(var, true_var, 4 * std::sqrt((mu4 - true_var * true_var) / n));
}

TEST(DomainUniform, EmpiricalCdfStaysWithinTwoPercentOfTheUniformCdf) {
  EXPECT_LT(ks_uniform(as_doubles(draw(uniform(0, 1))), 0, 1), 0.02);
}

TEST(DomainLoguniform, LogOfTheSamplesIsUniform) {
  std::vector<double> logs;
  for (const Json& v : draw(loguniform(1e-5, 1e-1))) {
    ASSERT_GE(v.get<double>(), 1e-5);
    ASSERT_LT(v.get<double>(), 1e-1);
    logs.push_back(std::log(v.get<double>()));
  }
  EXPECT_LT(ks_uniform(logs, std::log(1e-5), std::log(1e-1)), 0.02);
}

TEST(DomainQuniform, SamplesAreMultiplesOfQThatPrintCleanly) {
  const std::regex clean(R"([01]\.\d)");
  std::set<std::string> seen;
  for (const Json& v : draw(quniform(0, 1, 0.1))) {
    ASSERT_TRUE(std::regex_match(v.dump(), clean)) << v.dump();
    seen.insert(v.dump());
  }
  EXPECT_EQ(seen.size(), 11u);  // 0.0 ... 1.0, both ends included by rounding
}

TEST(DomainQuniform, StaysInsideBoundsThatAreNotMultiplesOfQ) {
  for (const Json& v : draw(quniform(0.05, 0.95, 0.1))) {
    ASSERT_GE(v.get<double>(), 0.05);
    ASSERT_LE(v.get<double>(), 0.95);
    ASSERT_TRUE(is_multiple(v.get<double>(), 0.1)) << v.dump();
  }
}

TEST(DomainQloguniform, SamplesArePositiveMultiplesOfQWithinBounds) {
  for (const Json& v : draw(qloguniform(1e-4, 1, 1e-4))) {
    ASSERT_GE(v.get<double>(), 1e-4);
    ASSERT_LE(v.get<double>(), 1);
    ASSERT_TRUE(is_multiple(v.get<double>(), 1e-4));
    ASSERT_LE(v.dump().size(), 7u) << v.dump();  // e.g. 0.0123, not 0.012300000000000002
  }
}

TEST(DomainRandint, DrawsEveryValueEquallyOftenAndNeverTheUpperBound) {
  std::map<int64_t, int> counts;
  for (const Json& v : draw(randint(0, 5))) {
    ASSERT_TRUE(v.is_number_integer());
    counts[v.get<int64_t>()]++;
  }
  ASSERT_EQ(counts.size(), 5u);
  EXPECT_EQ(counts.begin()->first, 0);
  EXPECT_EQ(counts.rbegin()->first, 4);
  const double p = 0.2, sigma = std::sqrt(kDraws * p * (1 - p));
  for (auto [value, count] : counts) EXPECT_NEAR(count, kDraws * p, 4 * sigma) << value;
}

TEST(DomainQrandint, UpperBoundIsReachableAndEveryValueIsAMultipleOfQ) {
  std::map<int64_t, int> counts;
  for (const Json& v : draw(qrandint(0, 10, 5))) {
    ASSERT_TRUE(v.is_number_integer());
    counts[v.get<int64_t>()]++;
  }
  EXPECT_EQ(counts.size(), 3u);
  EXPECT_GT(counts[10], 0);
  EXPECT_GT(counts[0], 0);
  EXPECT_GT(counts[5], 0);
}

TEST(DomainQrandint, LowerBoundThatIsNotAMultipleIsNeverUndershot) {
  std::set<int64_t> seen;
  for (const Json& v : draw(qrandint(1, 10, 2), 2000)) seen.insert(v.get<int64_t>());
  EXPECT_EQ(seen, (std::set<int64_t>{2, 4, 6, 8, 10}));
}

TEST(DomainLograndint, IsLogUniformAndExcludesTheUpperBound) {
  int below_ten = 0;
  for (const Json& v : draw(lograndint(1, 100))) {
    ASSERT_TRUE(v.is_number_integer());
    ASSERT_GE(v.get<int64_t>(), 1);
    ASSERT_LT(v.get<int64_t>(), 100);
    below_ten += v.get<int64_t>() < 10;
  }
  // P(x < 10) = 1/2 for log-uniform on [1, 100).
  EXPECT_NEAR(below_ten, kDraws / 2, 4 * std::sqrt(kDraws * 0.25));
}

TEST(DomainQlograndint, IncludesTheUpperBoundAndRespectsQ) {
  std::set<int64_t> seen;
  for (const Json& v : draw(qlograndint(1, 64, 1))) seen.insert(v.get<int64_t>());
  EXPECT_EQ(*seen.begin(), 1);
  EXPECT_EQ(*seen.rbegin(), 64);
  for (const Json& v : draw(qlograndint(8, 1024, 8), 2000)) {
    ASSERT_EQ(v.get<int64_t>() % 8, 0);
    ASSERT_GE(v.get<int64_t>(), 8);
    ASSERT_LE(v.get<int64_t>(), 1024);
  }
}

TEST(DomainRandn, MeanAndStandardDeviationMatch) {
  auto xs = as_doubles(draw(randn(2, 3)));
  double mean = 0, var = 0;
  for (double x : xs) mean += x / kDraws;
  for (double x : xs) var += (x - mean) * (x - mean) / (kDraws - 1);
  EXPECT_NEAR(mean, 2, 4 * 3 / std::sqrt(kDraws));
  EXPECT_NEAR(std::sqrt(var), 3, 0.1);
}

TEST(DomainQrandn, SamplesAreMultiplesOfQ) {
  for (const Json& v : draw(qrandn(0, 1, 0.5), 2000)) ASSERT_TRUE(is_multiple(v.get<double>(), 0.5)) << v.dump();
}

TEST(DomainChoice, ReturnsEachValueUniformly) {
  std::map<std::string, int> counts;
  for (const Json& v : draw(choice({"sgd", "adam", 3}))) counts[v.dump()]++;
  ASSERT_EQ(counts.size(), 3u);
  const double sigma = std::sqrt(kDraws * (1.0 / 3) * (2.0 / 3));
  for (auto [value, count] : counts) EXPECT_NEAR(count, kDraws / 3.0, 4 * sigma) << value;
  EXPECT_EQ(counts.count("3"), 1u);
}

TEST(DomainGridSearch, CannotBeSampled) {
  std::mt19937_64 rng(1);
  EXPECT_THROW(grid_search({1, 2}).sample(rng), Error);
}

TEST(DomainValidation, RejectsBadBoundsWithOneClearLine) {
  EXPECT_EQ(what_of([] { uniform(5, 1); }), "uniform: lower bound 5 must be less than upper bound 1");
  EXPECT_EQ(what_of([] { uniform(1, 1); }), "uniform: lower bound 1 must be less than upper bound 1");
  EXPECT_EQ(what_of([] { loguniform(0, 1); }), "loguniform: bounds must be positive, got [0, 1]");
  EXPECT_EQ(what_of([] { lograndint(0, 10); }), "lograndint: bounds must be positive, got [0, 10]");
  EXPECT_EQ(what_of([] { choice({}); }), "choice: needs at least one value");
  EXPECT_EQ(what_of([] { grid_search({}); }), "grid_search: needs at least one value");
  EXPECT_THAT(what_of([] { quniform(0, 1, 0); }), HasSubstr("quniform: q must be positive"));
  EXPECT_THAT(what_of([] { qrandint(0, 10, 0); }), HasSubstr("qrandint: q must be a positive integer"));
  EXPECT_EQ(what_of([] { randn(0, 0); }), "randn: sd must be positive, got 0");
  EXPECT_EQ(what_of([] { randint(3, 3); }), "randint: lower bound 3 must be less than upper bound 3");
  EXPECT_THAT(what_of([] { qrandint(1, 4, 5); }), HasSubstr("no multiple of q=5"));
  EXPECT_THAT(what_of([] { uniform(0, INFINITY); }), HasSubstr("finite"));
}

TEST(DomainMakeDomain, BuildsEveryNamedDomainFromPositionalArgs) {
  EXPECT_EQ(make_domain("loguniform", {1e-5, 0.1}).to_json(), Json::parse(R"({"loguniform": [1e-5, 0.1]})"));
  EXPECT_EQ(make_domain("qrandint", {16, 256, 16}).to_json().dump(), R"({"qrandint":[16,256,16]})");
  EXPECT_EQ(make_domain("randint", {1, 4}).to_json().dump(), R"({"randint":[1,4]})");
  EXPECT_EQ(make_domain("qrandint", {1, 8}).q, 1);  // q defaults to 1 as in Ray
  EXPECT_EQ(make_domain("randn", Json::array()).sd, 1);
  EXPECT_EQ(make_domain("choice", {"a", "b"}).values.size(), 2u);
  EXPECT_EQ(make_domain("grid_search", {1}).kind, Domain::Kind::kGrid);
}

TEST(DomainMakeDomain, AcceptsTheObjectForm) {
  Domain d = make_domain("quniform", Json{{"lower", 0}, {"upper", 1}, {"q", 0.25}});
  EXPECT_EQ(d.low, 0);
  EXPECT_EQ(d.high, 1);
  EXPECT_EQ(d.q, 0.25);
  EXPECT_THAT(what_of([] { make_domain("uniform", Json{{"lower", 0}, {"uper", 1}}); }),
              HasSubstr("unknown argument 'uper'"));
}

TEST(DomainMakeDomain, RejectsWrongArityTypesAndNames) {
  EXPECT_EQ(what_of([] { make_domain("qrandint", {1}); }), "qrandint expects [lower, upper, q], got [1]");
  EXPECT_EQ(what_of([] { make_domain("uniform", {"a", 1}); }), R"(uniform expects [lower, upper], got ["a",1])");
  EXPECT_THAT(what_of([] { make_domain("randint", {1.5, 4}); }), HasSubstr("randint expects [lower, upper]"));
  EXPECT_THAT(what_of([] { make_domain("choice", 3); }), HasSubstr("choice expects a list of values"));
  EXPECT_EQ(what_of([] { make_domain("bogus", Json::array()); }), "unknown domain 'bogus'");
  EXPECT_EQ(what_of([] { make_domain("loguniform", {0, 1}); }), "loguniform: bounds must be positive, got [0, 1]");
}

TEST(DomainToJson, RoundTripsEveryDomainThroughMakeDomain) {
  std::vector<Domain> all = {uniform(-1, 1),    quniform(0, 1, 0.1),   loguniform(1e-5, 1), qloguniform(1, 100, 5),
                             randint(0, 9),     qrandint(0, 100, 10),  lograndint(1, 1000), qlograndint(4, 64, 4),
                             randn(1, 2),       qrandn(0, 1, 0.5),     choice({"a", 1}),    grid_search({true, false})};
  ASSERT_EQ(all.size(), domain_names().size());
  for (const Domain& d : all) {
    Json j = d.to_json();
    Domain back = make_domain(j.begin().key(), j.begin().value());
    EXPECT_EQ(back.to_json(), j);
    EXPECT_EQ(back.kind, d.kind);
    EXPECT_EQ(back.log, d.log);
    EXPECT_EQ(back.upper_inclusive, d.upper_inclusive);
    EXPECT_NE(std::find(domain_names().begin(), domain_names().end(), d.name), domain_names().end());
  }
  EXPECT_TRUE(randint(0, 9).to_json()["randint"][1].is_number_integer());
  EXPECT_TRUE(uniform(0, 9).to_json()["uniform"][1].is_number_float());
}

RC_GTEST_PROP(DomainProperty, QuniformSamplesAreInRangeMultiplesOfQ, ()) {
  const double q = *rc::gen::element(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0);
  const double low = *rc::gen::inRange(-1000, 1000) / 10.0;
  const double high = low + q * *rc::gen::inRange(1, 100) + *rc::gen::inRange(0, 10) / 100.0;
  const Domain d = quniform(low, high, q);
  std::mt19937_64 rng(*rc::gen::arbitrary<uint64_t>());
  for (int i = 0; i < 50; ++i) {
    double v = d.sample(rng).get<double>();
    RC_ASSERT(v >= low);
    RC_ASSERT(v <= high);
    RC_ASSERT(is_multiple(v, q));
  }
}

RC_GTEST_PROP(DomainProperty, QrandintSamplesAreInclusiveMultiplesOfQ, ()) {
  const int64_t low = *rc::gen::inRange<int64_t>(-1000, 1000);
  const int64_t high = low + *rc::gen::inRange<int64_t>(1, 1000);
  const int64_t q = *rc::gen::inRange<int64_t>(1, 50);
  const bool has_multiple = std::floor(static_cast<double>(high) / q) >= std::ceil(static_cast<double>(low) / q);
  if (!has_multiple) {
    RC_ASSERT_THROWS_AS(qrandint(low, high, q), ConfigError);
    return;
  }
  const Domain d = qrandint(low, high, q);
  std::mt19937_64 rng(*rc::gen::arbitrary<uint64_t>());
  for (int i = 0; i < 50; ++i) {
    Json v = d.sample(rng);
    RC_ASSERT(v.is_number_integer());
    RC_ASSERT(v.get<int64_t>() >= low);
    RC_ASSERT(v.get<int64_t>() <= high);
    RC_ASSERT(v.get<int64_t>() % q == 0);
  }
}

RC_GTEST_PROP(DomainProperty, RandintAndLograndintNeverReachTheUpperBound, ()) {
  const int64_t low = *rc::gen::inRange<int64_t>(1, 1000);
  const int64_t high = low + *rc::gen::inRange<int64_t>(1, 5);
  std::mt19937_64 rng(*rc::gen::arbitrary<uint64_t>());
  for (const Domain& d : {randint(low, high), lograndint(low, high)}) {
    for (int i = 0; i < 50; ++i) {
      int64_t v = d.sample(rng).get<int64_t>();
      RC_ASSERT(v >= low);
      RC_ASSERT(v < high);
    }
  }
}

// The random searcher's per-trial generator: SplitMix64 as its authors
// published it (Steele, Lea, Flood 2014; splitmix64.c of the xoshiro
// reference code), seed 1234567: its first five outputs.
TEST(SplitMix64, MatchesThePublishedSequence) {
  SplitMix64 rng(1234567);
  const std::vector<uint64_t> published = {6457827717110365317ULL, 3203168211198807973ULL, 9817491932198370423ULL,
                                           4593380528125082431ULL, 16408922859458223821ULL};
  std::vector<uint64_t> drawn;
  for (size_t i = 0; i < published.size(); ++i) drawn.push_back(rng());
  EXPECT_EQ(drawn, published);
}

// Every domain draws from SplitMix64 what it draws from std::mt19937_64:
// the two samples' largest CDF gap (two-sample Kolmogorov-Smirnov) stays
// under 0.025 (the 0.001 critical value for 20,000 each is 0.0195), and the
// values stay in the domain's bounds.
TEST(SplitMix64, DrivesEveryDomainAsTheMersenneTwisterDoes) {
  const std::vector<Domain> domains = {uniform(-5, 10),  loguniform(1e-5, 1e-1), quniform(0, 1, 0.1),
                                       randint(1, 10),   lograndint(1, 1000),    qrandint(0, 100, 5),
                                       randn(3, 2),      choice({"a", "b", "c"})};
  for (const Domain& d : domains) {
    std::mt19937_64 twister(42);
    SplitMix64 split(42);
    std::vector<double> a, b;
    for (int i = 0; i < kDraws; ++i) {
      Json x = d.sample(twister), y = d.sample(split);
      if (d.kind == Domain::Kind::kChoice) {
        a.push_back(x == "a" ? 0 : x == "b" ? 1 : 2);
        b.push_back(y == "a" ? 0 : y == "b" ? 1 : 2);
        continue;
      }
      a.push_back(x.get<double>());
      b.push_back(y.get<double>());
      if (d.kind != Domain::Kind::kNormal) {
        ASSERT_GE(b.back(), d.low) << d.to_json();
        ASSERT_LE(b.back(), d.high) << d.to_json();
      }
    }
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    double gap = 0;
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
      const double at = std::min(a[i], b[j]);
      while (i < a.size() && a[i] == at) ++i;
      while (j < b.size() && b[j] == at) ++j;
      gap = std::max(gap, std::fabs(static_cast<double>(i) - static_cast<double>(j)) / kDraws);
    }
    EXPECT_LT(gap, 0.025) << d.to_json();
  }
}

}  // namespace
}  // namespace tune
