// The MPI communicator of a trial's worker group, for trainables that use MPI
// themselves (the data-parallel helpers in trainer/torch do).
//
//   #include "trainer/communicator.h"
//   MPI_Comm comm = tune::communicator(session);  // MPI_COMM_NULL in-process
//   MPI_Allreduce(MPI_IN_PLACE, &loss, 1, MPI_DOUBLE, MPI_SUM, comm);
//
// Kept apart from trainer/session.h so programs that do not use MPI never
// see <mpi.h>. Linking tune::torch brings MPI's headers and libraries.
#pragma once

#include <mpi.h>

#include "trainer/session.h"

namespace tune {

// Every rank of a worker group gets the same communicator (the group's
// MPI_COMM_WORLD); an in-process trial gets MPI_COMM_NULL.
inline MPI_Comm communicator(const Session& session) {
  const void* handle = session.mpi_communicator_handle();
  return handle ? *static_cast<const MPI_Comm*>(handle) : MPI_COMM_NULL;
}

}  // namespace tune
