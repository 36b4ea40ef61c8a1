#include <gtest/gtest.h>
TEST(SweepPlaceholder, Builds) {}
