#include <gtest/gtest.h>
TEST(DomainPlaceholder, Builds) {}
