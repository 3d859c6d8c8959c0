/* fmmcl_mpi_main.c — fmmcl-mpi: fmmcl under mpirun (being written). */
int main(void) { return 1; }
