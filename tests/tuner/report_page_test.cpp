// The report page: one self-contained file whose embedded data survives any
// text in the store, written atomically; bad names are one-line errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "storage/store.h"
#include "test_util.h"
#include "base/error.h"
#include "tuner/report/report.h"

namespace tune {
namespace {

using tune::testing::TempDir;
namespace fs = std::filesystem;

const std::string kHostile = "</script><script>alert(1)</script><!--";

struct SmallStore {
  TempDir dir;
  std::unique_ptr<Store> store = Store::open(dir.path());

  explicit SmallStore(const std::string& status = "FINISHED") {
    ExperimentRecord e{0, "quad", status, "loss", "min"};
    const int64_t id = store->create_experiment(e);
    for (int i = 0; i < 3; ++i) {
      const int64_t trial = store->add_trial(id, i, {{"x", i}, {"note", i == 1 ? kHostile : "ok"}});
      store->set_trial_status(trial, kRunning, 1);
      store->add_result(trial, 1, 1, {{"loss", i * i}}, 2);
      store->set_trial_status(trial, i == 2 ? kError : kTerminated, 3, i == 2 ? kHostile : "");
    }
  }
};

Json script_json(const std::string& page, const std::string& id) {
  const std::string open = "<script type=\"application/json\" id=\"" + id + "\">";
  const size_t start = page.find(open);
  if (start == std::string::npos) return Json();  // discarded: no such element
  const size_t end = page.find("</script>", start);
  return Json::parse(page.substr(start + open.size(), end - start - open.size()));
}

// The page's data: #tune-data, with each experiment's "later" fields put
// back from their elements (as the page's script does when it needs them).
Json page_data(const std::string& page) {
  Json data = script_json(page, "tune-data");
  EXPECT_TRUE(data.is_object());
  for (size_t n = 0; n < data["experiments"].size(); ++n) {
    Json& e = data["experiments"][n];
    const std::string prefix = "tune-later-" + std::to_string(n) + "-";
    for (const auto& entry : e["later"]) {
      std::string path = entry.get<std::string>();
      const bool parts = path.size() > 2 && path.compare(path.size() - 2, 2, "[]") == 0;
      if (parts) path.resize(path.size() - 2);
      Json value;
      if (parts) {
        value = Json::array();
        for (Json part; !(part = script_json(page, prefix + path + "." + std::to_string(value.size()))).is_null();) {
          value.push_back(part);
        }
      } else {
        value = script_json(page, prefix + path);
        EXPECT_FALSE(value.is_null()) << path;
      }
      const size_t dot = path.find('.');
      Json& owner = e[path.substr(0, dot)];
      EXPECT_FALSE(owner.contains(path.substr(dot + 1))) << path;
      owner[path.substr(dot + 1)] = value;
    }
  }
  return data;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ReportPage, IsOneFileWithItsDataIntactWhateverTheStoreHolds) {
  SmallStore s;
  const std::string page = render_report(*s.store, s.dir.path(), {"quad"});
  EXPECT_EQ(page.rfind("<!doctype html>", 0), 0u);
  EXPECT_EQ(count(page, "<script src"), 0u);
  EXPECT_EQ(count(page, "<link"), 0u);
  // error collector, ECharts, data, three scripts of the page, main(), the
  // rest of the data (6 trial fields, 2 parameters, 6 interval fields):
  // twenty-one elements, however many "</script>" the store's text holds.
  EXPECT_EQ(count(page, "</script>"), 21u);
  EXPECT_LT(page.find("tuneReport.main();"), page.find("id=\"tune-later-0-"));
  const Json data = page_data(page);
  ASSERT_EQ(data["experiments"].size(), 1u);
  const Json& e = data["experiments"][0];
  EXPECT_EQ(e["summary"]["name"], "quad");
  EXPECT_EQ(e["summary"]["best"]["trial"], 0);
  EXPECT_EQ(e["trials"]["error"][2], kHostile);
  EXPECT_EQ(e["summary"]["params"], (Json{"note", "x"}));
  EXPECT_EQ(e["trials"]["p"][0][1], kHostile);
  EXPECT_EQ(e["trials"]["status"][2], "ERROR");
  EXPECT_EQ(e["trials"]["attempts"][0], 1);
  EXPECT_EQ(e["intervals"]["trial"].size(), 3u);
  EXPECT_EQ(e["summary"]["intervals"], 3);
  EXPECT_FALSE(data["live"].get<bool>());
}

TEST(ReportPage, PutsWhatTheFirstScreenDoesNotDrawLater) {
  SmallStore s;
  const std::string page = render_report(*s.store, s.dir.path(), {"quad"});
  const Json first = script_json(page, "tune-data")["experiments"][0];
  EXPECT_EQ(first["later"], (Json{"trials.status", "trials.attempts", "trials.best", "trials.iterations", "trials.end",
                                  "trials.error", "trials.p[]", "intervals.trial", "intervals.attempt",
                                  "intervals.start", "intervals.end", "intervals.lane", "intervals.host"}));
  EXPECT_EQ(first["trials"], (Json{{"index", {0, 1, 2}}, {"value", {0, 1, 4}}}));  // what the history draws
  EXPECT_EQ(first["intervals"], Json::object());
  EXPECT_TRUE(first.contains("curves"));
  EXPECT_TRUE(first.contains("marks"));
  // After main(), one element a field; the parameters one a column.
  const size_t main = page.find("tuneReport.main();");
  for (const char* id : {"tune-later-0-trials.status", "tune-later-0-trials.p.0", "tune-later-0-trials.p.1",
                         "tune-later-0-intervals.host"}) {
    EXPECT_GT(page.find(std::string("id=\"") + id + "\""), main) << id;
  }
  EXPECT_EQ(page.find("tune-later-0-trials.p.2"), std::string::npos);
  EXPECT_EQ(script_json(page, "tune-later-0-trials.status"), (Json{"TERMINATED", "TERMINATED", "ERROR"}));
}

TEST(ReportPage, IsAsciiAndItsTextMeansTheSame) {
  // Chromium keeps a script with one character beyond ASCII at 16 bits a
  // character: the page escapes them (ECharts has a few hundred).
  TempDir dir;
  auto store = Store::open(dir.path());
  const int64_t id = store->create_experiment(ExperimentRecord{0, "na\u00efve", "FINISHED", "loss", "min"});
  const std::string note = "caf\u00e9 \u2713 \U0001F600 <\u00e9>";
  const int64_t trial = store->add_trial(id, 0, {{"note", note}});
  store->set_trial_status(trial, kRunning, 1);
  store->add_result(trial, 1, 1, {{"loss", 1}}, 2);
  store->set_trial_status(trial, kTerminated, 3);
  const std::string page = render_report(*store, dir.path(), {"na\u00efve"});
  size_t beyond = 0;
  for (char c : page) beyond += static_cast<unsigned char>(c) >= 0x80;
  EXPECT_EQ(beyond, 2u);  // the title's "\u00ef" (HTML, not script)
  EXPECT_NE(page.find("\\ud83d\\ude00"), std::string::npos);  // a surrogate pair
  const Json data = page_data(page);
  EXPECT_EQ(data["experiments"][0]["summary"]["name"], "na\u00efve");
  EXPECT_EQ(data["experiments"][0]["trials"]["p"][0][0], note);
}

TEST(ReportPage, ARunningExperimentMakesThePageLive) {
  SmallStore s("RUNNING");
  ReportOptions options;
  options.reload_seconds = 3;
  const Json data = page_data(render_report(*s.store, s.dir.path(), {"quad"}, options));
  EXPECT_TRUE(data["live"].get<bool>());
  EXPECT_EQ(data["reload_s"], 3);
}

TEST(ReportPage, UnknownExperimentsAndBadOptionsAreOneLineErrors) {
  SmallStore s;
  try {
    render_report(*s.store, s.dir.path(), {"quad", "qaud"});
    FAIL() << "no error";
  } catch (const NotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find("no experiment named 'qaud'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("did you mean 'quad'?"), std::string::npos) << e.what();
  }
  ReportOptions bad;
  bad.mode = "up";
  EXPECT_THROW(render_report(*s.store, s.dir.path(), {"quad"}, bad), ConfigError);
  EXPECT_THROW(render_report(*s.store, s.dir.path(), {}), ConfigError);
  EXPECT_THROW(write_report(s.dir.file("nowhere"), {"quad"}, s.dir.file("r.html")), NotFoundError);
}

TEST(ReportPage, IsReplacedAtomicallyAndLeftAloneOnFailure) {
  SmallStore s;
  const std::string output = s.dir.file("report.html");
  std::ofstream(output) << "old";
  write_report(s.dir.path(), {"quad"}, output);
  std::stringstream text;
  text << std::ifstream(output).rdbuf();
  EXPECT_EQ(text.str().rfind("<!doctype html>", 0), 0u);
  for (const auto& entry : fs::directory_iterator(s.dir.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
  }
  EXPECT_THROW(write_report(s.dir.path(), {"quad"}, s.dir.file("missing/report.html")), Error);
  EXPECT_FALSE(fs::exists(s.dir.file("missing")));
}

}  // namespace
}  // namespace tune
