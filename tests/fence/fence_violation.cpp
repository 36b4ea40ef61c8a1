// Must NOT compile against tune::tune: internals are outside the fence.
#include "storage/internal/statements.h"
#include "tuner/driver/driver_impl.h"

int main() { return 0; }
