// mpi_hold DIR: an MPI program for tuner/mpirun_leftovers_mpi_test.cpp. Each
// rank initializes MPI (its shared-memory segment made), takes part in one
// allreduce, writes DIR/ready.<rank>, then waits to be killed (120 s at most).
#include <mpi.h>
#include <unistd.h>

#include <fstream>
#include <string>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int sum = rank;
  MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (argc > 1) std::ofstream(std::string(argv[1]) + "/ready." + std::to_string(rank)) << sum << "\n";
  for (int i = 0; i < 1200; ++i) ::usleep(100 * 1000);
  MPI_Finalize();
  return 0;
}
