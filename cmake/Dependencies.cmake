# Third-party dependencies, all Debian packages. Shared by the build and by find_package(lanes).
#
# OpenBLAS must be the OpenMP build (libopenblas-openmp-dev): it shares libgomp's threads with our
# parallel_for, so a loop of single-threaded GEMMs inside a parallel region never oversubscribes.
# The system default libopenblas may be the pthreads build, so we point FindBLAS at the OpenMP
# directory first; lanes also checks openblas_get_parallel() at run time.
include(CMakeFindDependencyMacro)
find_dependency(OpenMP)

set(_lanes_openblas_dir /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp)
set(BLA_VENDOR OpenBLAS)
list(PREPEND CMAKE_LIBRARY_PATH ${_lanes_openblas_dir})
find_dependency(BLAS)

# MPI, when lanes was built with LANES_WITH_MPI (set by the build, and by lanesConfig.cmake).
if(LANES_WITH_MPI)
  find_dependency(MPI COMPONENTS CXX)
endif()
