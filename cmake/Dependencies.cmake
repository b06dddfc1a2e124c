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

# libxsmm (libxsmm-dev): JIT kernels for GEMMs with small N and K, 2x OpenBLAS there
# (src/kernels/matmul_xsmm.h). Debian ships only the static library; it falls back on BLAS's
# sgemm_/dgemm_ (OpenBLAS's) and needs libdl and pthreads.
find_dependency(Threads)
find_path(LANES_XSMM_INCLUDE_DIR libxsmm.h)
find_library(LANES_XSMM_LIBRARY NAMES libxsmm.a xsmm)
if(NOT LANES_XSMM_INCLUDE_DIR OR NOT LANES_XSMM_LIBRARY)
  message(FATAL_ERROR "lanes needs libxsmm, which was not found (apt-get install libxsmm-dev)")
endif()
if(NOT TARGET lanes::xsmm)
  add_library(lanes::xsmm UNKNOWN IMPORTED)
  set_target_properties(lanes::xsmm PROPERTIES
    IMPORTED_LOCATION "${LANES_XSMM_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${LANES_XSMM_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "BLAS::BLAS;Threads::Threads;${CMAKE_DL_LIBS};m")
endif()

# MPI, when lanes was built with LANES_WITH_MPI (set by the build, and by lanesConfig.cmake).
if(LANES_WITH_MPI)
  find_dependency(MPI COMPONENTS CXX)
endif()
