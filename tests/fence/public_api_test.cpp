// Built against the fence only (tune::tune's exported include directory,
// no path into the source tree): every public header compiles on its own
// terms and the embedding API works through it.
#include <gtest/gtest.h>

#include "base/error.h"
#include "base/json.h"
#include "base/names.h"
#include "schedulers/scheduler.h"
#include "search/domain.h"
#include "search/gp.h"
#include "search/search_space.h"
#include "search/searcher.h"
#include "storage/analysis.h"
#include "storage/store.h"
#include "trainer/session.h"
#include "tuner/spec/sweep_spec.h"
#include "tuner/tuner.h"

#ifdef MPI_VERSION
#error "a public header pulled in <mpi.h>"
#endif
#ifdef SQLITE_VERSION
#error "a public header pulled in <sqlite3.h>"
#endif
#ifdef YAML_CPP_API
#error "a public header pulled in yaml-cpp"
#endif

namespace {

TEST(PublicApi, AnEmbeddingProgramSeesTheTunerAndNothingElse) {
  tune::SweepSpec spec;
  spec.metric = "loss";
  spec.mode = "min";
  spec.param_space.add("x", tune::uniform(-1, 1));
  EXPECT_NO_THROW(spec.validate());
  spec.scheduler.type = "asha";
  spec.scheduler.params = {{"max_t", 0}};
  EXPECT_THROW(spec.validate(), tune::ConfigError);
  EXPECT_EQ(tune::closest_match("trainabel", {"trainable", "metric"}), "trainable");
}

}  // namespace
