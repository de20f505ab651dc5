// The BLAS library's own thread pool, sized with the rank's share of the
// cores. libtorch's set_num_threads sizes its intra-op pool but not
// OpenBLAS's (Debian's libtorch calls OpenBLAS for matrix products), which
// starts one thread per core in every process: 4 MPI ranks on 2 cores then
// run 8 BLAS threads, and ranks that are threads of one process share one
// pool whose callers OpenBLAS serialises: 4 in-process ranks took 21–27 ms
// of compute per CNN step against 15 with one BLAS thread per caller.
#pragma once

namespace qccl::engines {

// Sets the BLAS library's threads to `threads` if it is OpenBLAS (found at
// run time; other BLAS libraries are left alone). Returns whether it did.
bool set_blas_threads(int threads);

}  // namespace qccl::engines
